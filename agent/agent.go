// Package agent runs one turn of the model loop: it builds each model request
// (system prompt, history, queued notices, the user's prompt, tool schemas),
// streams the answer, dispatches tool calls in order and loops until the model
// stops. It emits its own small Event type; the protocol layer translates.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// StopReason says why a turn ended.
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopCancelled       StopReason = "cancelled"
)

// DefaultMaxRequests bounds the model requests of one prompt.
const DefaultMaxRequests = 100

// EventKind tells which fields of an Event are set.
type EventKind int

const (
	// EventText: Text is a piece of the visible answer.
	EventText EventKind = iota
	// EventThought: Text is a piece of reasoning.
	EventThought
	// EventToolCall: Call was requested by the model and is pending.
	EventToolCall
	// EventToolRunning: Call passed its permission check and is running.
	EventToolRunning
	// EventToolOutput: Output is live output of the running Call.
	EventToolOutput
	// EventToolResult: Call finished with Result.
	EventToolResult
)

// CallInfo identifies a tool call for the editor.
type CallInfo struct {
	ID   string
	Name string
	// Args is the arguments text as the model sent it.
	Args string
	// Call is the tool's description of the call, made once before it
	// runs: what the editor shows and what the approver asks about.
	Call tools.Call
}

// Event is something the editor should see.
type Event struct {
	Kind   EventKind
	Text   string
	Call   CallInfo
	Output tools.Chunk
	Result tools.Result
}

// Approval is the answer to a permission question.
type Approval struct {
	Allowed bool
	// Message is told to the model as the call's result when not allowed.
	Message string
}

// Approver is asked before each tool call runs; it decides from the call's
// Subject (CallInfo.Call.Subject). An error (the turn was cancelled while
// asking) ends the turn.
type Approver interface {
	Approve(ctx context.Context, call CallInfo) (Approval, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, call CallInfo) (Approval, error)

func (f ApproverFunc) Approve(ctx context.Context, call CallInfo) (Approval, error) {
	return f(ctx, call)
}

// Loop holds what every turn shares.
type Loop struct {
	Provider Provider
	// Tools are offered to the model in this order.
	Tools []tools.Tool
	// MaxRequests bounds model requests per turn; zero means
	// DefaultMaxRequests.
	MaxRequests int
	// OS names the operating system in the system prompt; empty omits it.
	OS     string
	Logger *zap.Logger
}

// ToolSource offers a session's own tools (its MCP servers') beside the
// loop's. It is read before every model request, so a list that changed
// during a turn reaches the next request.
type ToolSource interface {
	// Tools are offered after Loop.Tools, in this order.
	Tools() []tools.Tool
	// Lookup finds a tool of the source by name, including one it offered
	// and no longer does (its call then is an error result that says why);
	// false for a name the source never had.
	Lookup(name string) (tools.Tool, bool)
}

// Turn is one prompt's input.
type Turn struct {
	Caller tools.Caller
	// Extra is the session's own tools; nil means only Loop.Tools.
	Extra ToolSource
	// History is the conversation so far, without the system prompt.
	History []Message
	// Prompt is the user's message text.
	Prompt string
	// Notices drains the completion notices queued for the session since the
	// last model request; nil means none.
	Notices func() []string
	// Approver, if set, is asked before each tool call.
	Approver Approver
	// Model is the model to ask (a session's config option); empty means
	// the provider's configured model.
	Model string
	// Record, if set, is given each message as it is added to the turn's
	// outcome (the prompt first), on the turn's goroutine: the session's
	// store writes them as they happen.
	Record func(Message)
	// Emit receives events. It is called from the turn's goroutine, except
	// EventToolOutput which may come from executor goroutines concurrently;
	// it must not block.
	Emit func(Event)
}

// Outcome is what a turn produced.
type Outcome struct {
	// Messages are the messages this turn added to the history (the user
	// prompt first), also when the turn failed or was cancelled.
	Messages []Message
	Stop     StopReason
}

// Run runs one turn. A provider failure is returned as an error (wrapping
// ErrProvider) together with the messages added so far; a cancelled ctx ends
// the turn with StopCancelled and no error.
func (l *Loop) Run(ctx context.Context, t Turn) (Outcome, error) {
	log := l.Logger
	if log == nil {
		log = zap.NewNop()
	}
	maxReq := l.MaxRequests
	if maxReq <= 0 {
		maxReq = DefaultMaxRequests
	}
	emit := t.Emit
	if emit == nil {
		emit = func(Event) {}
	}
	byName := make(map[string]tools.Tool, len(l.Tools))
	base := make([]ToolSpec, 0, len(l.Tools))
	for _, tl := range l.Tools {
		byName[tl.Name()] = tl
		base = append(base, specOf(tl))
	}
	lookup := func(name string) (tools.Tool, bool) {
		if tl, ok := byName[name]; ok {
			return tl, true
		}
		if t.Extra != nil {
			return t.Extra.Lookup(name)
		}
		return nil, false
	}
	system := Message{Role: RoleSystem, Content: SystemPrompt(t.Caller.Cwd, l.OS)}

	record := t.Record
	if record == nil {
		record = func(Message) {}
	}
	out := Outcome{Messages: []Message{{Role: RoleUser, Content: t.Prompt}}}
	record(out.Messages[0])
	for n := 0; ; n++ {
		if ctx.Err() != nil {
			out.Stop = StopCancelled
			return out, nil
		}
		if n >= maxReq {
			out.Stop = StopMaxTurnRequests
			return out, nil
		}
		if t.Notices != nil {
			if notes := t.Notices(); len(notes) > 0 {
				out.Messages = append(out.Messages, Message{Role: RoleUser, Content: strings.Join(notes, "\n")})
				record(out.Messages[len(out.Messages)-1])
			}
		}
		specs := base
		if t.Extra != nil {
			specs = slices.Clip(base)
			for _, tl := range t.Extra.Tools() {
				if _, clash := byName[tl.Name()]; !clash {
					specs = append(specs, specOf(tl))
				}
			}
		}
		req := Request{Model: t.Model, Tools: specs}
		req.Messages = make([]Message, 0, 1+len(t.History)+len(out.Messages))
		req.Messages = append(req.Messages, system)
		req.Messages = append(req.Messages, t.History...)
		req.Messages = append(req.Messages, out.Messages...)

		resp, err := l.Provider.Stream(ctx, req, func(d Delta) {
			if d.Reasoning != "" {
				emit(Event{Kind: EventThought, Text: d.Reasoning})
			}
			if d.Text != "" {
				emit(Event{Kind: EventText, Text: d.Text})
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				out.Stop = StopCancelled
				return out, nil
			}
			// Run promises ErrProvider for every provider failure. Errors
			// that already carry it are written for the user (what failed,
			// where, what to do); a prefix would only bury that.
			if !errors.Is(err, ErrProvider) {
				err = fmt.Errorf("%w: model request %d: %w", ErrProvider, n+1, err)
			}
			return out, err
		}
		msg := resp.Message
		msg.Role = RoleAssistant
		out.Messages = append(out.Messages, msg)
		record(msg)
		if len(msg.ToolCalls) == 0 {
			// A provider that finished its stream although the turn was
			// cancelled meanwhile: the client asked to stop, so the turn
			// ends "cancelled" as ACP requires.
			if ctx.Err() != nil {
				out.Stop = StopCancelled
				return out, nil
			}
			if resp.FinishReason == FinishLength {
				out.Stop = StopMaxTokens
			} else {
				out.Stop = StopEndTurn
			}
			return out, nil
		}
		results, cancelled := l.runCalls(ctx, t, lookup, msg.ToolCalls, emit, record, log)
		out.Messages = append(out.Messages, results...)
		if cancelled {
			out.Stop = StopCancelled
			return out, nil
		}
		if resp.FinishReason == FinishLength {
			out.Stop = StopMaxTokens
			return out, nil
		}
	}
}

// abortedText is what the model is told for a call the cancel stopped or
// never reached, matching the executor's aborted result.
const abortedText = "Error: command aborted"

// runCalls runs the calls in order and returns one tool message per call.
// Every call gets an answer — the API requires it — even when the turn is
// cancelled part-way.
func (l *Loop) runCalls(ctx context.Context, t Turn, lookup func(string) (tools.Tool, bool), calls []ToolCall, emit func(Event), record func(Message), log *zap.Logger) ([]Message, bool) {
	infos := make([]CallInfo, len(calls))
	prepared := make([]tools.Prepared, len(calls))
	known := make([]bool, len(calls))
	for i, c := range calls {
		var tl tools.Tool
		tl, known[i] = lookup(c.Name)
		if known[i] {
			// The one place the arguments are read for this call: the
			// description, the subject and the run all come from it.
			prepared[i] = tl.Prepare(t.Caller, rawArgs(c.Arguments))
		} else {
			prepared[i] = tools.Prepared{Call: tools.Call{Title: c.Name, Kind: tools.KindOther}}
		}
		infos[i] = CallInfo{ID: c.ID, Name: c.Name, Args: c.Arguments, Call: prepared[i].Call}
		emit(Event{Kind: EventToolCall, Call: infos[i]})
	}
	msgs := make([]Message, 0, len(calls))
	answer := func(info CallInfo, res tools.Result) {
		emit(Event{Kind: EventToolResult, Call: info, Result: res})
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: info.ID, Content: res.Text})
		record(msgs[len(msgs)-1])
	}
	cancelled := false
	for i, info := range infos {
		p := prepared[i]
		if cancelled || ctx.Err() != nil {
			cancelled = true
			answer(info, p.Skipped(abortedText))
			continue
		}
		if !known[i] {
			answer(info, p.Skipped(fmt.Sprintf("Error: unknown tool %q", info.Name)))
			continue
		}
		if t.Approver != nil {
			ap, err := t.Approver.Approve(ctx, info)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("permission request failed", zap.String("tool_call", info.ID), zap.Error(err))
				}
				cancelled = ctx.Err() != nil || errors.Is(err, context.Canceled)
				text := abortedText
				if !cancelled {
					text = "Error: permission request failed: " + err.Error()
				}
				answer(info, p.Skipped(text))
				continue
			}
			if !ap.Allowed {
				answer(info, p.Skipped(ap.Message))
				continue
			}
		}
		emit(Event{Kind: EventToolRunning, Call: info})
		id := info
		res := p.Run(ctx, func(c tools.Chunk) {
			emit(Event{Kind: EventToolOutput, Call: id, Output: c})
		})
		answer(info, res)
		if ctx.Err() != nil {
			cancelled = true
		}
	}
	return msgs, cancelled
}

func specOf(tl tools.Tool) ToolSpec {
	return ToolSpec{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Schema()}
}

// rawArgs turns the model's arguments text into a JSON value for the tool:
// an empty string is an empty object (so the tool names the missing
// property), anything else is passed as is and the tool reports bad JSON.
func rawArgs(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
