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
	"strings"
	"time"

	"github.com/google/uuid"
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
	// StopRefusal: the model refused (finish_reason content_filter); ACP
	// tells the client not to send this prompt again as it is.
	StopRefusal StopReason = "refusal"
)

// DefaultMaxRequests bounds the model requests of one prompt.
const DefaultMaxRequests = 100

// MaxCallsPerAnswer bounds the tool calls of one model answer that run: a
// runaway answer of thousands of calls would otherwise run them all, and
// in Ask mode ask the user thousands of questions.
const MaxCallsPerAnswer = 64

// tooManyCallsText is the result of each call past MaxCallsPerAnswer.
var tooManyCallsText = fmt.Sprintf("Error: not run: one answer may make at most %d tool calls; make this call again in a later answer", MaxCallsPerAnswer)

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
	// EventUsage: Usage is how full the context window is after a model
	// response (or after a compaction).
	EventUsage
	// EventCompactionStart: Compaction (ID, Trigger, Focus, KeptFrom,
	// PreTokens) is being summarized.
	EventCompactionStart
	// EventCompactionEnd: Compaction finished; Err says why it failed, and
	// then the conversation is unchanged.
	EventCompactionEnd
	// EventInstructions: Instructions names the project instruction files
	// the model was given: at a session's first prompt that has any, and
	// again when one changed. Not part of the model's history.
	EventInstructions
	// EventPlan: Plan is the session's whole plan from now on (a tool
	// result carried it, or /plan shows it again).
	EventPlan
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
	Kind EventKind
	Text string
	// MessageID names the model message a Text or Thought piece belongs to
	// (a UUID): the reasoning and the answer of one response are two
	// messages, and every response starts new ones.
	MessageID  string
	Call       CallInfo
	Output     tools.Chunk
	Result     tools.Result
	Usage      ContextUsage
	Compaction Compaction
	// Instructions is set for EventInstructions.
	Instructions *InstructionsRead
	// Plan is set for EventPlan.
	Plan *tools.Plan
	Err  error
}

// Approval is the answer to a permission question.
type Approval struct {
	Allowed bool
	// Message is told to the model as the call's result when not allowed.
	Message string
	// Unattended: not allowed because no one could be asked (dsh-acp
	// exec without a terminal); nobody rejected it.
	Unattended bool
	// Sandboxed: the allowed call runs confined (tools.WithSandbox), as
	// decided with the approval itself, so a mode switched meanwhile can
	// neither skip the question nor the sandbox.
	Sandboxed bool
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
	// FileTools: Tools has the file tools, and the system prompt says to
	// change files with them (else: through bash).
	FileTools bool
	// MaxRequests bounds model requests per turn; zero means
	// DefaultMaxRequests.
	MaxRequests int
	// OS names the operating system in the system prompt; empty omits it.
	OS string
	// Now is the clock: the date the system prompt gives, and the hour
	// prices with peak hours are read at; nil means time.Now.
	Now func() time.Time
	// ContextWindow is the model's context window in tokens; zero means
	// DefaultContextWindow.
	ContextWindow int
	// CompactAt is the share of the window (0 < CompactAt <= 1) past which
	// the next request is compacted first; zero means DefaultCompactAt.
	CompactAt float64
	// Model is the provider's configured model, which a turn without a
	// Model of its own asks: its prices are looked up by this name.
	Model string
	// Price prices every model's tokens (--price) when the endpoint sends
	// no cost; nil means the built-in prices of known models (KnownPrice),
	// else no cost.
	Price *Price
	// NoBuiltinPrices: known models' prices are not used (a scripted run,
	// which no endpoint bills).
	NoBuiltinPrices bool
	// Tasks answers /tasks and /kill; nil means the agent has none.
	Tasks Tasks
	// Undo answers /undo; nil means it is not available.
	Undo   Undoer
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

// Starting is a ToolSource whose tools may still be on their way (MCP
// servers starting): the first model request of a turn waits for them, so
// a prompt sent right after a session began is offered every tool.
type Starting interface {
	// WaitStarted returns when every tool of the source is listed or has
	// failed to come (each bounded by the source's own start timeout), or
	// when ctx ends.
	WaitStarted(ctx context.Context) error
}

// Turn is one prompt's input.
type Turn struct {
	Caller tools.Caller
	// Extra is the session's own tools; nil means only Loop.Tools.
	Extra ToolSource
	// History is the conversation so far, without the system prompt.
	History []Message
	// Prompt is the user's message text. One that starts with a slash
	// command (Commands) is answered by the agent itself.
	Prompt string
	// Images are the prompt's images.
	Images []Image
	// ReadsImages: the model is sent the images of the conversation; when
	// false each image is replaced by ImageNote.
	ReadsImages bool
	// Usage is the session's last known context usage; zero means none.
	Usage ContextUsage
	// Notices drains the completion notices queued for the session since the
	// last model request; nil means none.
	Notices func() []string
	// Project is what the model is told of the project: its instruction
	// files' text and where it is (read for the turn by package
	// instructions); zero means none.
	Project InstructionSet
	// NewInstructions, if set, is what the editor is to be shown of the
	// instruction files read for the turn (the first time, and after a
	// change); the turn shows it as it starts.
	NewInstructions *InstructionsRead
	// Plan is the session's current plan, for /plan; nil means none yet.
	Plan *tools.Plan
	// Changes is what the session's calls changed, for /undo; nil means
	// nothing is kept.
	Changes ChangeLog
	// Approver, if set, is asked before each tool call.
	Approver Approver
	// Model is the model to ask (a session's config option); empty means
	// the provider's configured model.
	Model string
	// Thinking, if set, is asked the thought level (a session's config
	// option) before each request, so that a change in the middle of a
	// turn (the editor's option, while a command runs) applies from the
	// next request; nil or empty sends none.
	Thinking func() string
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
	// prompt first), also when the turn failed or was cancelled; none for
	// a prompt that was not sent because it alone does not fit the window.
	Messages []Message
	Stop     StopReason
	// History, when not nil, is the whole conversation from now on: a
	// compaction replaced its older part. It replaces the turn's History
	// followed by Messages.
	History []Message
	// Usage is the context usage after the turn's last model response or
	// compaction; zero Size when there was none.
	Usage ContextUsage
	// Spent is the tokens of the turn's model requests together, as the
	// endpoint counted them (requests it sent no usage for are left out),
	// and Cost what they cost (empty Currency: unknown).
	Spent Usage
	Cost  Cost
}

// recorder is t.Record, or a func that records nothing.
func (t Turn) recorder() func(Message) {
	if t.Record == nil {
		return func(Message) {}
	}
	return t.Record
}

// promptFits fails when the prompt in hand does not fit the window by
// itself (with the system prompt and tools): it would have to be
// summarized, and a prompt never is.
func (l *Loop) promptFits(system, prompt Message, caller tools.Caller, extra ToolSource) error {
	need := estimateRequest(Request{Messages: []Message{system, prompt}, Tools: l.specs(caller, extra)})
	if need <= l.window() {
		return nil
	}
	return fmt.Errorf("%w: this prompt alone is about %d tokens with the system prompt and tools, more than the model's context window of %d tokens, and a prompt is never summarized; it was not sent: shorten it or attach less",
		ErrContextExceeded, need, l.window())
}

// imagesFor is msgs as a model that reads images (or not) is sent them.
func imagesFor(reads bool, msgs []Message) []Message {
	if reads {
		return msgs
	}
	return withoutImages(msgs)
}

// dropRefusedImages keeps images the endpoint refused out of the prompt
// in hand (the first message): every later request would be refused for
// them too.
func (o *Outcome) dropRefusedImages(err error) {
	if errors.Is(err, ErrImageRefused) && len(o.Messages) > 0 && len(o.Messages[0].Images) > 0 {
		o.Messages[0] = withoutImages([]Message{o.Messages[0]})[0]
	}
}

// withoutImages replaces every image of msgs by ImageNote, copying only
// the messages it changes.
func withoutImages(msgs []Message) []Message {
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if m.Role == RoleTool {
			// A tool's text already notes each image it returned.
			m.Images = nil
			msgs[i] = m
			continue
		}
		notes := make([]string, 0, len(m.Images)+1)
		if m.Content != "" {
			notes = append(notes, m.Content)
		}
		for range m.Images {
			notes = append(notes, ImageNote)
		}
		m.Content, m.Images = strings.Join(notes, "\n"), nil
		msgs[i] = m
	}
	return msgs
}

// done sets History to the final conversation when a compaction replaced
// part of it.
func (o Outcome) done(conv []Message) Outcome {
	if o.History != nil {
		o.History = conv
	}
	return o
}

// specs are the tools as offered to the model.
func (l *Loop) specs(caller tools.Caller, extra ToolSource) []ToolSpec {
	specs := make([]ToolSpec, 0, len(l.Tools))
	names := make(map[string]bool, len(l.Tools))
	for _, tl := range l.Tools {
		if !tools.IsOffered(tl, caller) {
			continue
		}
		specs = append(specs, specOf(tl))
		names[tl.Name()] = true
	}
	if extra != nil {
		for _, tl := range extra.Tools() {
			if !names[tl.Name()] {
				specs = append(specs, specOf(tl))
			}
		}
	}
	return specs
}

// stream sends one request, giving every piece of the answer the id of the
// message it belongs to: one for the reasoning, one for the text.
func (l *Loop) stream(ctx context.Context, req Request, emit func(Event)) (Response, error) {
	var thoughtID, textID string
	return l.Provider.Stream(ctx, req, func(d Delta) {
		if d.Reasoning != "" {
			if thoughtID == "" {
				thoughtID = newMessageID()
			}
			emit(Event{Kind: EventThought, Text: d.Reasoning, MessageID: thoughtID})
		}
		if d.Text != "" {
			if textID == "" {
				textID = newMessageID()
			}
			emit(Event{Kind: EventText, Text: d.Text, MessageID: textID})
		}
	})
}

// usage is the context usage after resp: as the endpoint counted it, else
// estimated.
func (l *Loop) usage(req Request, resp Response, log *zap.Logger) ContextUsage {
	u := resp.Usage
	cu := ContextUsage{Used: u.PromptTokens + u.CompletionTokens, Size: l.window()}
	if cu.Used == 0 {
		cu.Used = u.TotalTokens
	}
	if !u.Reported || cu.Used == 0 {
		cu.Used = estimateRequest(req) + completionTokens(resp.Message)
		cu.Estimated = true
		log.Debug("usage estimated: the endpoint reported none", zap.Int("used_tokens", cu.Used), zap.Int("bytes_per_token", bytesPerToken))
	}
	return cu
}

// addCost adds what one request cost to the session's total: the
// endpoint's own figure, else the configured or built-in price of model.
// A total in no currency yet takes the first known cost's.
func (l *Loop) addCost(total Cost, model string, u Usage) Cost {
	price := l.Price
	if price == nil && u.Cost == nil && !l.NoBuiltinPrices {
		if p, ok := KnownPrice(model); ok {
			price = &p
		}
	}
	c, ok := costOf(u, price, l.now())
	if !ok {
		return total
	}
	return addCosts(total, c)
}

// addCosts is a + b; a cost in another currency than the total's is left
// out (all our costs are USD today).
func addCosts(a, b Cost) Cost {
	switch {
	case b.Currency == "":
		return a
	case a.Currency == "":
		return b
	case a.Currency != b.Currency:
		return a
	}
	return Cost{Amount: a.Amount + b.Amount, Currency: a.Currency}
}

// addUsage is a + b, counting only what endpoints reported.
func addUsage(a, b Usage) Usage {
	if !b.Reported {
		return a
	}
	return Usage{
		PromptTokens:     a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		TotalTokens:      a.TotalTokens + b.TotalTokens,
		CachedTokens:     a.CachedTokens + b.CachedTokens,
		Reported:         true,
	}
}

// now is the time by the loop's clock.
func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// estimatedUsage is the estimated size of the next request over conv.
func (l *Loop) estimatedUsage(t Turn, conv []Message) ContextUsage {
	prompt := l.systemPrompt(t.Caller, t.Project)
	req := Request{Tools: l.specs(t.Caller, t.Extra), Messages: append([]Message{{Role: RoleSystem, Content: prompt}}, conv...)}
	return ContextUsage{Used: estimateRequest(req), Size: l.window(), Estimated: true}
}

// systemMessage is the turn's system prompt: the environment and the
// instruction files the turn was given (read once per prompt, so an edited
// AGENTS.md applies from the next one); the editor is told which files
// were read when that is news.
func (l *Loop) systemMessage(t Turn, emit func(Event), log *zap.Logger) Message {
	if read := t.NewInstructions; read != nil {
		log.Info("project instructions read", zap.Strings("files", read.Paths), zap.Strings("changed", read.Changed), zap.Strings("cut", read.Cut))
		emit(Event{Kind: EventInstructions, Instructions: read})
	}
	return Message{Role: RoleSystem, Content: l.systemPrompt(t.Caller, t.Project)}
}

// systemPrompt is the system prompt for a session in the caller's cwd
// and other roots, whose project is project.
func (l *Loop) systemPrompt(caller tools.Caller, project InstructionSet) string {
	return SystemPrompt(PromptEnv{Now: l.now(), OS: l.OS, Cwd: caller.Cwd, Roots: caller.Roots, Project: project, FileTools: l.FileTools})
}

// newMessageID names a model message for the editor (ACP wants UUIDs).
func newMessageID() string { return uuid.NewString() }

// toolImages are the images a call returned, named after it; nil when
// none.
func toolImages(info CallInfo, res tools.Result) []Image {
	var out []Image
	for i, img := range res.Images {
		out = append(out, Image{MimeType: img.MimeType, Data: img.Data, Name: fmt.Sprintf("%s result image %d", info.Name, i+1)})
	}
	return out
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
