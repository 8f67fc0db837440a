package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// turn is one prompt on its way through the model loop: Run makes it and
// its steps are the methods below (ask the model, take its answer, run the
// calls, compact, end). It lives on Run's goroutine only: a call's output
// callback, which executor goroutines call, holds emit, not the turn.
type turn struct {
	// Set by newTurn, never changed.
	l      *Loop
	ctx    context.Context
	in     Turn
	log    *zap.Logger
	emit   func(Event)
	record func(Message)
	maxReq int
	system Message

	// out is what the turn produced: add and keep append its Messages,
	// compact sets its History, answered its Usage, Cost and Spent, end
	// its Stop.
	out Outcome
	// conv is the conversation the model is sent: History and the turn's
	// messages, with compactions applied. keep appends to it, compact
	// replaces it.
	conv []Message
	// pin is where the prompt in hand is in conv: no compaction
	// summarizes it. Only compact moves it.
	pin int
	// used is the size of the last request with its answer, which covered
	// conv[:covered]; 0 when unknown. answered sets them, compact clears
	// them.
	used, covered int
	// cost is the session's cumulative cost, carried from turn to turn;
	// spend adds to it. shown is the cost the editor was last told of.
	cost, shown Cost
	// uselessCompaction: one this turn left the conversation above the
	// threshold; another would not help either. Set by compact.
	uselessCompaction bool
}

// Run runs one turn. A provider failure is returned as an error (wrapping
// ErrProvider) together with the messages added so far; a cancelled ctx ends
// the turn with StopCancelled and no error.
//
// Before a request that would pass CompactAt of the window, and once after
// the endpoint says a request exceeds it (ErrContextExceeded, then the
// request is retried once), the conversation is compacted. A request that
// still does not fit ends the turn with an error wrapping
// ErrContextExceeded.
func (l *Loop) Run(ctx context.Context, in Turn) (Outcome, error) {
	log := l.Logger
	if log == nil {
		log = zap.NewNop()
	}
	emit := in.Emit
	if emit == nil {
		emit = func(Event) {}
	}
	if name, arg, ok := ParseCommand(in.Prompt); ok {
		log.Info("slash command", zap.String("command", name))
		return l.runCommand(ctx, in, name, arg, emit, log)
	}
	t := l.newTurn(ctx, in, emit, log)
	if w, ok := in.Extra.(Starting); ok {
		// A cancel ends the wait; run then ends the turn "cancelled".
		if err := w.WaitStarted(ctx); err != nil {
			log.Info("turn began before the session's tools were listed", zap.Error(err))
		}
	}
	// The prompt in hand is never summarized: one that does not fit the
	// window by itself cannot be sent at all. Not sent, it is not kept
	// either (no message, nothing recorded): in the history, every later
	// request would carry it and fail the same way.
	if err := l.promptFits(t.system, t.out.Messages[0], in.Caller, in.Extra); err != nil {
		return Outcome{}, err
	}
	t.record(t.out.Messages[0])
	return t.run()
}

// newTurn reads the system prompt (telling the editor of new instruction
// files) and takes the prompt in hand; Run records it once it can be sent.
func (l *Loop) newTurn(ctx context.Context, in Turn, emit func(Event), log *zap.Logger) turn {
	t := turn{l: l, ctx: ctx, in: in, log: log, emit: emit, maxReq: l.MaxRequests}
	if t.maxReq <= 0 {
		t.maxReq = DefaultMaxRequests
	}
	t.system = l.systemMessage(in, emit, log)
	t.record = in.recorder()
	t.out = Outcome{Messages: []Message{{Role: RoleUser, Content: in.Prompt, Images: in.Images}}}
	t.conv = make([]Message, 0, len(in.History)+8)
	t.conv = append(t.conv, in.History...)
	t.conv = append(t.conv, t.out.Messages[0])
	t.pin = len(in.History)
	t.used, t.covered = in.Usage.Used, len(in.History)
	t.cost, t.shown = in.Usage.Cost, in.Usage.Cost
	return t
}

// run asks the model until it stops asking for tool calls, or something
// ends the turn first.
func (t *turn) run() (Outcome, error) {
	for n := 0; ; n++ {
		switch {
		case t.ctx.Err() != nil:
			return t.end(StopCancelled), nil
		case n >= t.maxReq:
			return t.end(StopMaxTurnRequests), nil
		}
		t.addNotices()
		// The session's own tools may change between requests.
		specs := t.l.specs(t.in.Caller, t.in.Extra)
		t.compactIfFull(specs)
		req, resp, err := t.ask(specs)
		if err != nil {
			return t.failed(n, err)
		}
		t.answered(req, resp)
		if len(resp.Message.ToolCalls) == 0 {
			return t.end(t.finalStop(resp)), nil
		}
		if stop := t.runCalls(resp); stop != "" {
			return t.end(stop), nil
		}
	}
}

// end is the turn's outcome, stopped for stop.
func (t *turn) end(stop StopReason) Outcome {
	t.showCost()
	t.out.Stop = stop
	return t.out.done(t.conv)
}

// keep adds a message the turn produced; add records it too (tool results
// are recorded by runCalls as they are answered).
func (t *turn) keep(m Message) {
	t.out.Messages = append(t.out.Messages, m)
	t.conv = append(t.conv, m)
}

func (t *turn) add(m Message) {
	t.keep(m)
	t.record(m)
}

// addNotices tells the model of the completion notices queued since its
// last request.
func (t *turn) addNotices() {
	if t.in.Notices == nil {
		return
	}
	if notes := t.in.Notices(); len(notes) > 0 {
		t.add(Message{Role: RoleUser, Content: strings.Join(notes, "\n")})
	}
}

// request is the next model request over conv, offering specs.
func (t *turn) request(specs []ToolSpec) Request {
	req := Request{Model: t.in.Model, Tools: specs}
	if t.in.Thinking != nil {
		req.Thinking = t.in.Thinking()
	}
	req.Messages = make([]Message, 0, 1+len(t.conv))
	req.Messages = append(req.Messages, t.system)
	req.Messages = append(req.Messages, t.conv...)
	req.Messages = BoundImages(imagesFor(t.in.ReadsImages, req.Messages))
	return req
}

// compactIfFull compacts before a request that would pass the threshold,
// unless a compaction this turn already showed it does not help.
func (t *turn) compactIfFull(specs []ToolSpec) {
	if t.uselessCompaction {
		return
	}
	next := estimateRequest(t.request(specs))
	if t.used > 0 && t.covered <= len(t.conv) {
		next = t.used + EstimateMessages(t.conv[t.covered:])
	}
	if next > t.l.threshold() {
		t.log.Info("compacting before a request over the threshold", zap.Int("next_tokens", next), zap.Int("threshold", t.l.threshold()))
		t.compact(TriggerAuto)
	}
}

// compact summarizes the older part of conv; false when it failed, and
// then the conversation is as it was.
func (t *turn) compact(trigger string) bool {
	next, c, err := t.l.compact(t.ctx, t.in.Model, t.conv, t.pin, trigger, "", t.emit, t.log)
	// The summary request is paid for like any other; the editor sees its
	// cost with the next usage update (or showCost's, if none follows).
	t.spend(t.in.Model, c.Spent)
	if err != nil {
		return false
	}
	t.pin = c.promptIndex(t.pin)
	t.conv = next
	t.out.History = t.conv
	t.used, t.covered = 0, 0
	t.uselessCompaction = c.PostTokens >= t.l.threshold()
	return true
}

// ask sends the next request and streams its answer to the editor. When
// the endpoint says it exceeds the context window, the conversation is
// compacted and the request sent once more.
func (t *turn) ask(specs []ToolSpec) (Request, Response, error) {
	req := t.request(specs)
	resp, err := t.l.stream(t.ctx, req, t.emit)
	if err == nil || !errors.Is(err, ErrContextExceeded) || t.ctx.Err() != nil {
		return req, resp, err
	}
	t.log.Info("the endpoint says the request exceeds the context window; compacting and retrying once", zap.Error(err))
	if !t.compact(TriggerAuto) {
		return req, resp, err
	}
	req = t.request(specs)
	resp, err = t.l.stream(t.ctx, req, t.emit)
	if err != nil && errors.Is(err, ErrContextExceeded) {
		err = fmt.Errorf("%w: the request does not fit the model's context window (%d tokens) even after compacting the conversation; start a new session: %w",
			ErrProvider, t.l.window(), err)
	}
	return req, resp, err
}

// failed ends the turn after request n failed: cancelled when the turn
// was, else with the error.
func (t *turn) failed(n int, err error) (Outcome, error) {
	if t.ctx.Err() != nil {
		return t.end(StopCancelled), nil
	}
	// Run promises ErrProvider for every provider failure. Errors that
	// already carry it are written for the user (what failed, where, what
	// to do); a prefix would only bury that.
	if !errors.Is(err, ErrProvider) {
		err = fmt.Errorf("%w: model request %d: %w", ErrProvider, n+1, err)
	}
	t.out.dropRefusedImages(err)
	t.showCost()
	return t.out.done(t.conv), err
}

// answered adds the model's answer to req and counts what it used and
// cost.
func (t *turn) answered(req Request, resp Response) {
	msg := resp.Message
	msg.Role = RoleAssistant
	t.add(msg)
	t.out.Usage = t.l.usage(req, resp, t.log)
	t.spend(req.Model, resp.Usage)
	t.out.Usage.Cost = t.cost
	t.used, t.covered = t.out.Usage.Used, len(t.conv)
	t.shown = t.cost
	t.emit(Event{Kind: EventUsage, Usage: t.out.Usage})
}

// spend counts a request to model (empty: the Loop's) that used u: its
// tokens and its cost, into the turn's and the session's.
func (t *turn) spend(model string, u Usage) {
	spent := t.l.addCost(Cost{}, cmp.Or(model, t.l.Model), u)
	t.cost = addCosts(t.cost, spent)
	t.out.Cost = addCosts(t.out.Cost, spent)
	t.out.Spent = addUsage(t.out.Spent, u)
}

// showCost tells the editor (and so the store) the session's cost when a
// request no usage update followed changed it: a compaction's summary
// request, then the turn ended before the next answer. The context in use
// stays the last known.
func (t *turn) showCost() {
	if t.cost == t.shown {
		return
	}
	u := t.out.Usage
	if u.Size == 0 {
		u = t.in.Usage
	}
	if u.Size == 0 {
		u = t.l.estimatedUsage(t.in, t.conv)
	}
	u.Cost = t.cost
	t.out.Usage, t.shown = u, t.cost
	t.emit(Event{Kind: EventUsage, Usage: u})
}

// finalStop is why a turn whose last answer asked for no tool calls ends.
func (t *turn) finalStop(resp Response) StopReason {
	switch {
	case t.ctx.Err() != nil:
		// A provider that finished its stream although the turn was
		// cancelled meanwhile: the client asked to stop, so the turn ends
		// "cancelled" as ACP requires.
		return StopCancelled
	case resp.FinishReason == FinishLength:
		return StopMaxTokens
	case resp.FinishReason == FinishContentFilter:
		return StopRefusal
	}
	return StopEndTurn
}

// runCalls runs the tool calls of resp and keeps their results; the stop
// reason is empty when the turn goes on.
func (t *turn) runCalls(resp Response) StopReason {
	results, cancelled := t.calls(resp.Message.ToolCalls)
	for _, r := range results {
		t.keep(r)
	}
	switch {
	case cancelled:
		return StopCancelled
	case resp.FinishReason == FinishLength:
		return StopMaxTokens
	}
	return ""
}

// lookup finds a tool the model may call: the loop's (the last of the
// name, should two share it), else the session's own.
func (t *turn) lookup(name string) (tools.Tool, bool) {
	for i := len(t.l.Tools) - 1; i >= 0; i-- {
		if tl := t.l.Tools[i]; tl.Name() == name {
			return tl, true
		}
	}
	if t.in.Extra != nil {
		return t.in.Extra.Lookup(name)
	}
	return nil, false
}

// abortedText is what the model is told for a call the cancel stopped or
// never reached, matching the executor's aborted result.
const abortedText = "Error: command aborted"

// calls runs the calls in order and returns one tool message per call.
// Every call gets an answer — the API requires it — even when the turn is
// cancelled part-way.
func (t *turn) calls(calls []ToolCall) ([]Message, bool) {
	prepared := t.prepare(calls)
	msgs := make([]Message, 0, len(calls))
	cancelled := false
	for i, pc := range prepared {
		info, p := pc.info, pc.p
		switch {
		case i >= MaxCallsPerAnswer:
			msgs = append(msgs, t.answer(info, p.Skipped(tooManyCallsText)))
		case cancelled || t.ctx.Err() != nil:
			cancelled = true
			msgs = append(msgs, t.answer(info, p.Skipped(abortedText)))
		case !pc.known:
			msgs = append(msgs, t.answer(info, p.Skipped(fmt.Sprintf("Error: unknown tool %q", info.Name))))
		default:
			var m Message
			m, cancelled = t.call(info, p)
			msgs = append(msgs, m)
		}
	}
	return msgs, cancelled
}

// preparedCall is a tool call of the model's answer, ready to run.
type preparedCall struct {
	info CallInfo
	p    tools.Prepared
	// known is false for a tool of no such name.
	known bool
}

// prepare reads each call's arguments once, for the description, the
// subject and the run, and shows the editor the calls.
func (t *turn) prepare(calls []ToolCall) []preparedCall {
	out := make([]preparedCall, len(calls))
	for i, c := range calls {
		pc := &out[i]
		var tl tools.Tool
		tl, pc.known = t.lookup(c.Name)
		if pc.known {
			pc.p = tl.Prepare(t.in.Caller, rawArgs(c.Arguments))
		} else {
			pc.p = tools.Prepared{Call: tools.Call{Title: c.Name, Kind: tools.KindOther}}
		}
		pc.info = CallInfo{ID: c.ID, Name: c.Name, Args: c.Arguments, Call: pc.p.Call}
		t.emit(Event{Kind: EventToolCall, Call: pc.info})
	}
	return out
}

// call asks the approver about one call and runs it if allowed; cancelled
// when the turn was cancelled by the time it is answered.
func (t *turn) call(info CallInfo, p tools.Prepared) (m Message, cancelled bool) {
	var ap Approval
	if t.in.Approver != nil {
		var err error
		ap, err = t.in.Approver.Approve(t.ctx, info)
		if err != nil {
			if t.ctx.Err() == nil {
				t.log.Warn("permission request failed", zap.String("tool_call", info.ID), zap.Error(err))
			}
			cancelled = t.ctx.Err() != nil || errors.Is(err, context.Canceled)
			text := abortedText
			if !cancelled {
				text = "Error: permission request failed: " + err.Error()
			}
			return t.answer(info, p.Skipped(text)), cancelled
		}
		if !ap.Allowed {
			return t.answer(info, p.Skipped(ap.Message)), false
		}
	}
	runCtx := tools.WithCallID(t.ctx, info.ID)
	if ap.Sandboxed {
		runCtx = tools.WithSandbox(runCtx)
	}
	t.emit(Event{Kind: EventToolRunning, Call: info})
	emit := t.emit
	res := p.Run(runCtx, func(c tools.Chunk) {
		emit(Event{Kind: EventToolOutput, Call: info, Output: c})
	})
	m = t.answer(info, res)
	return m, t.ctx.Err() != nil
}

// answer shows the editor a call's result and records the tool message
// the model is told.
func (t *turn) answer(info CallInfo, res tools.Result) Message {
	t.emit(Event{Kind: EventToolResult, Call: info, Result: res})
	if res.Plan != nil {
		t.emit(Event{Kind: EventPlan, Plan: res.Plan})
	}
	m := Message{Role: RoleTool, ToolCallID: info.ID, Content: res.Text, Images: toolImages(info, res)}
	// Images past the bound are notes from the start: neither the
	// conversation nor the session's log holds them.
	m = BoundImages([]Message{m})[0]
	t.record(m)
	return m
}
