package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestMain(m *testing.M) {
	testutil.Main(m, nil)
}

// step is one scripted model answer.
type step func(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error)

// replay is a fake provider that plays steps in order and records every
// request it was sent.
type replay struct {
	t     *testing.T
	steps []step

	// mu guards reqs.
	mu   sync.Mutex
	reqs []agent.Request
}

func newReplay(t *testing.T, steps ...step) *replay { return &replay{t: t, steps: steps} }

func (r *replay) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	r.mu.Lock()
	n := len(r.reqs)
	cp := req
	cp.Messages = append([]agent.Message(nil), req.Messages...)
	r.reqs = append(r.reqs, cp)
	r.mu.Unlock()
	if n >= len(r.steps) {
		r.t.Errorf("model request %d not scripted", n+1)
		return agent.Response{}, fmt.Errorf("%w: unscripted request", agent.ErrProvider)
	}
	return r.steps[n](ctx, req, emit)
}

func (r *replay) requests() []agent.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Request(nil), r.reqs...)
}

// say answers with text and no tool calls.
func say(text string) step {
	return func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: text}, FinishReason: agent.FinishStop}, nil
	}
}

// callTools answers with tool calls.
func callTools(calls ...agent.ToolCall) step {
	return func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{ToolCalls: calls}, FinishReason: agent.FinishToolCalls}, nil
	}
}

func tc(id, name, args string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: name, Arguments: args}
}

// invocation is what a fake tool's run func gets.
type invocation struct {
	Args json.RawMessage
	Live tools.Live
}

// fakeTool is a tools.Tool whose Run is a func; it records the calls.
type fakeTool struct {
	name string
	run  func(ctx context.Context, call invocation) tools.Result
	// subject is every call's approval subject.
	subject tools.Subject
	// skip, if set, is the prepared calls' Skip.
	skip func(text string) tools.Result

	// mu guards calls and prepares.
	mu       sync.Mutex
	calls    []string
	prepares int
}

func (f *fakeTool) Name() string            { return f.name }
func (f *fakeTool) Description() string     { return "fake " + f.name }
func (f *fakeTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func (f *fakeTool) Prepare(_ tools.Caller, args json.RawMessage) tools.Prepared {
	f.mu.Lock()
	f.prepares++
	f.mu.Unlock()
	return tools.Prepared{
		Call: tools.Call{Title: f.name + " " + string(args), Kind: "execute", Subject: f.subject},
		Run: func(ctx context.Context, live tools.Live) tools.Result {
			f.mu.Lock()
			f.calls = append(f.calls, string(args))
			f.mu.Unlock()
			if f.run == nil {
				return tools.Result{Text: "ran " + string(args)}
			}
			return f.run(ctx, invocation{Args: args, Live: live})
		},
		Skip: f.skip,
	}
}

func (f *fakeTool) prepared() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prepares
}

func (f *fakeTool) argsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// recorder collects events.
type recorder struct {
	// mu guards events.
	mu     sync.Mutex
	events []agent.Event
	// on, if set, runs for each event (on the emitting goroutine).
	on func(agent.Event)
}

func (r *recorder) emit(e agent.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	on := r.on
	r.mu.Unlock()
	if on != nil {
		on(e)
	}
}

func (r *recorder) list() []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Event(nil), r.events...)
}

// brief renders events compactly for comparison.
func brief(events []agent.Event) []string {
	var out []string
	for _, e := range events {
		switch e.Kind {
		case agent.EventText:
			out = append(out, "text:"+e.Text)
		case agent.EventThought:
			out = append(out, "thought:"+e.Text)
		case agent.EventToolCall:
			out = append(out, "call:"+e.Call.ID)
		case agent.EventToolRunning:
			out = append(out, "running:"+e.Call.ID)
		case agent.EventToolOutput:
			out = append(out, "output:"+e.Call.ID)
		case agent.EventToolResult:
			out = append(out, "result:"+e.Call.ID+":"+e.Result.Text)
		}
	}
	return out
}

func newLoop(t *testing.T, p agent.Provider, tl ...tools.Tool) *agent.Loop {
	return &agent.Loop{Provider: p, Tools: tl, Logger: zaptest.NewLogger(t)}
}

func TestRunStreamsDeltasInOrder(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, func(_ context.Context, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		emit(agent.Delta{Reasoning: "let me "})
		emit(agent.Delta{Reasoning: "think"})
		emit(agent.Delta{Text: "Hel"})
		emit(agent.Delta{Reasoning: "again", Text: "lo"})
		emit(agent.Delta{})
		return agent.Response{Message: agent.Message{Content: "Hello", ReasoningContent: "let me thinkagain"}, FinishReason: agent.FinishStop}, nil
	})
	var rec recorder
	out, err := newLoop(t, p).Run(ctx, agent.Turn{Prompt: "hi", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"thought:let me ", "thought:think", "text:Hel", "thought:again", "text:lo"}
	if diff := cmp.Diff(want, brief(rec.list())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if out.Stop != agent.StopEndTurn {
		t.Errorf("stop = %q, want end_turn", out.Stop)
	}
	wantMsgs := []agent.Message{
		{Role: agent.RoleUser, Content: "hi"},
		{Role: agent.RoleAssistant, Content: "Hello", ReasoningContent: "let me thinkagain"},
	}
	if diff := cmp.Diff(wantMsgs, out.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestRunRequestShape(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, say("ok"))
	tool := &fakeTool{name: "bash"}
	history := []agent.Message{{Role: agent.RoleUser, Content: "before"}, {Role: agent.RoleAssistant, Content: "earlier answer"}}
	l := newLoop(t, p, tool)
	l.OS = "linux"
	if _, err := l.Run(ctx, agent.Turn{Caller: tools.Caller{SessionID: "s1", Cwd: "/work/x"}, History: history, Prompt: "now"}); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	if len(msgs) != 4 || msgs[0].Role != agent.RoleSystem {
		t.Fatalf("messages = %+v, want system + 2 history + prompt", msgs)
	}
	if !strings.Contains(msgs[0].Content, "/work/x") || !strings.Contains(msgs[0].Content, "linux") {
		t.Errorf("system prompt does not name the cwd and OS:\n%s", msgs[0].Content)
	}
	if diff := cmp.Diff(append(history, agent.Message{Role: agent.RoleUser, Content: "now"}), msgs[1:]); diff != "" {
		t.Errorf("history + prompt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]agent.ToolSpec{{Name: "bash", Description: "fake bash", Parameters: json.RawMessage(`{"type":"object"}`)}}, reqs[0].Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestRunToolCallsInOrder(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	a := &fakeTool{name: "a"}
	b := &fakeTool{name: "b", run: func(_ context.Context, call invocation) tools.Result {
		return tools.Result{Text: "b failed", IsError: true}
	}}
	p := newReplay(t,
		callTools(tc("c1", "a", `{"n":1}`), tc("c2", "b", `{"n":2}`), tc("c3", "a", `{"n":3}`)),
		say("done"),
	)
	var rec recorder
	out, err := newLoop(t, p, a, b).Run(ctx, agent.Turn{Prompt: "go", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != agent.StopEndTurn {
		t.Errorf("stop = %q, want end_turn", out.Stop)
	}
	if diff := cmp.Diff([]string{`{"n":1}`, `{"n":3}`}, a.argsSeen()); diff != "" {
		t.Errorf("tool a calls (-want +got):\n%s", diff)
	}
	wantEvents := []string{
		"call:c1", "call:c2", "call:c3",
		"running:c1", `result:c1:ran {"n":1}`,
		"running:c2", "result:c2:b failed",
		"running:c3", `result:c3:ran {"n":3}`,
	}
	if diff := cmp.Diff(wantEvents, brief(rec.list())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	reqs := p.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	wantTail := []agent.Message{
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{tc("c1", "a", `{"n":1}`), tc("c2", "b", `{"n":2}`), tc("c3", "a", `{"n":3}`)}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: `ran {"n":1}`},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "b failed"},
		{Role: agent.RoleTool, ToolCallID: "c3", Content: `ran {"n":3}`},
	}
	got := reqs[1].Messages
	if diff := cmp.Diff(wantTail, got[len(got)-4:]); diff != "" {
		t.Errorf("second request tail (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got[1:], out.Messages[:len(out.Messages)-1]); diff != "" {
		t.Errorf("outcome messages differ from what the model was sent (-sent +outcome):\n%s", diff)
	}
}

func TestRunStopReasons(t *testing.T) {
	t.Parallel()
	loopCall := callTools(tc("x", "a", `{}`))
	tests := []struct {
		name        string
		maxRequests int
		steps       []step
		want        agent.StopReason
		wantReqs    int
	}{
		{name: "no tool calls ends the turn", steps: []step{say("bye")}, want: agent.StopEndTurn, wantReqs: 1},
		{name: "tool calls then text", steps: []step{loopCall, say("bye")}, want: agent.StopEndTurn, wantReqs: 2},
		{
			name: "finish length without calls", want: agent.StopMaxTokens, wantReqs: 1,
			steps: []step{func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
				return agent.Response{Message: agent.Message{Content: "trunc"}, FinishReason: agent.FinishLength}, nil
			}},
		},
		{
			name: "finish length with calls runs them and stops", want: agent.StopMaxTokens, wantReqs: 1,
			steps: []step{func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
				return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{tc("x", "a", "{}")}}, FinishReason: agent.FinishLength}, nil
			}},
		},
		{name: "step limit", maxRequests: 3, steps: []step{loopCall, loopCall, loopCall}, want: agent.StopMaxTurnRequests, wantReqs: 3},
		{name: "step limit of one", maxRequests: 1, steps: []step{loopCall}, want: agent.StopMaxTurnRequests, wantReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			p := newReplay(t, tt.steps...)
			tool := &fakeTool{name: "a"}
			l := newLoop(t, p, tool)
			l.MaxRequests = tt.maxRequests
			out, err := l.Run(ctx, agent.Turn{Prompt: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != tt.want {
				t.Errorf("stop = %q, want %q", out.Stop, tt.want)
			}
			if n := len(p.requests()); n != tt.wantReqs {
				t.Errorf("%d model requests, want %d", n, tt.wantReqs)
			}
			// Every tool call in the outcome has its answer.
			calls, answers := 0, 0
			for _, m := range out.Messages {
				calls += len(m.ToolCalls)
				if m.Role == agent.RoleTool {
					answers++
				}
			}
			if calls != answers {
				t.Errorf("%d tool calls but %d tool messages", calls, answers)
			}
		})
	}
}

func TestRunProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{name: "wrapping ErrProvider", err: fmt.Errorf("%w: rate limited (429), retry later", agent.ErrProvider)},
		{name: "plain error", err: errors.New("rate limited (429), retry later")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			p := newReplay(t,
				callTools(tc("c1", "a", `{}`)),
				func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
					return agent.Response{}, tt.err
				},
			)
			out, err := newLoop(t, p, &fakeTool{name: "a"}).Run(ctx, agent.Turn{Prompt: "p"})
			if !errors.Is(err, agent.ErrProvider) {
				t.Fatalf("err = %v, want one wrapping agent.ErrProvider", err)
			}
			if !strings.Contains(err.Error(), "rate limited (429), retry later") {
				t.Errorf("err = %q, want the provider's message", err)
			}
			want := []agent.Role{agent.RoleUser, agent.RoleAssistant, agent.RoleTool}
			var got []agent.Role
			for _, m := range out.Messages {
				got = append(got, m.Role)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("messages so far (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunCancelMidStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// honour: the provider returns ctx's error when cancelled; otherwise
		// it ignores the cancel and returns what it has.
		honour bool
		calls  bool
	}{
		{name: "provider aborts the stream", honour: true},
		{name: "provider finishes text after the cancel"},
		{name: "provider finishes tool calls after the cancel", calls: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(testutil.Context(t))
			defer cancel()
			tool := &fakeTool{name: "a"}
			p := newReplay(t, func(ctx context.Context, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
				emit(agent.Delta{Text: "partial"})
				<-ctx.Done()
				if tt.honour {
					return agent.Response{}, fmt.Errorf("stream: %w", ctx.Err())
				}
				m := agent.Message{Content: "partial"}
				if tt.calls {
					m.ToolCalls = []agent.ToolCall{tc("c1", "a", "{}")}
				}
				return agent.Response{Message: m, FinishReason: agent.FinishStop}, nil
			})
			rec := recorder{on: func(e agent.Event) {
				if e.Kind == agent.EventText {
					cancel()
				}
			}}
			out, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Emit: rec.emit})
			if err != nil {
				t.Fatalf("err = %v, want nil after a cancel", err)
			}
			if out.Stop != agent.StopCancelled {
				t.Errorf("stop = %q, want cancelled", out.Stop)
			}
			if n := len(tool.argsSeen()); n != 0 {
				t.Errorf("tool ran %d times after the cancel", n)
			}
			if n := len(p.requests()); n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
		})
	}
}

func TestRunCancelMidTool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	slow := &fakeTool{name: "slow", run: func(ctx context.Context, _ invocation) tools.Result {
		<-ctx.Done()
		return tools.Result{Text: "Error: command aborted", IsError: true}
	}}
	other := &fakeTool{name: "other"}
	p := newReplay(t, callTools(tc("c1", "other", `{}`), tc("c2", "slow", `{}`), tc("c3", "other", `{}`), tc("c4", "nope", `{}`)))
	rec := recorder{on: func(e agent.Event) {
		if e.Kind == agent.EventToolRunning && e.Call.ID == "c2" {
			cancel()
		}
	}}
	out, err := newLoop(t, p, slow, other).Run(ctx, agent.Turn{Prompt: "p", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != agent.StopCancelled {
		t.Errorf("stop = %q, want cancelled", out.Stop)
	}
	if n := len(other.argsSeen()); n != 1 {
		t.Errorf("tool other ran %d times, want 1 (the call after the cancel must not run)", n)
	}
	want := []agent.Message{
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "ran {}"},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "Error: command aborted"},
		{Role: agent.RoleTool, ToolCallID: "c3", Content: "Error: command aborted"},
		{Role: agent.RoleTool, ToolCallID: "c4", Content: "Error: command aborted"},
	}
	if diff := cmp.Diff(want, out.Messages[2:]); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	// Every call still gets a final result event for the editor.
	var results []string
	for _, e := range rec.list() {
		if e.Kind == agent.EventToolResult {
			results = append(results, e.Call.ID)
			if e.Call.ID != "c1" && !e.Result.IsError {
				t.Errorf("result of %s is not an error", e.Call.ID)
			}
		}
	}
	if diff := cmp.Diff([]string{"c1", "c2", "c3", "c4"}, results); diff != "" {
		t.Errorf("result events (-want +got):\n%s", diff)
	}
	if n := len(p.requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}

func TestRunDrainsNoticesBeforeEachRequest(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	queued := [][]string{{"bash-1 finished", "bash-2 finished"}, nil, {"bash-3 finished"}}
	drains := 0
	var mu sync.Mutex
	notices := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var n []string
		if drains < len(queued) {
			n = queued[drains]
		}
		drains++
		return n
	}
	p := newReplay(t, callTools(tc("c1", "a", "{}")), callTools(tc("c2", "a", "{}")), say("done"))
	out, err := newLoop(t, p, &fakeTool{name: "a"}).Run(ctx, agent.Turn{Prompt: "p", Notices: notices})
	if err != nil {
		t.Fatal(err)
	}
	if drains != 3 {
		t.Errorf("notices drained %d times, want once per request (3)", drains)
	}
	reqs := p.requests()
	last := func(r agent.Request) agent.Message { return r.Messages[len(r.Messages)-1] }
	if got, want := last(reqs[0]), (agent.Message{Role: agent.RoleUser, Content: "bash-1 finished\nbash-2 finished"}); !cmp.Equal(got, want) {
		t.Errorf("first request ends with %+v, want %+v", got, want)
	}
	if got := last(reqs[1]); got.Role != agent.RoleTool {
		t.Errorf("second request ends with %+v, want the tool result (no empty notice message)", got)
	}
	if got, want := last(reqs[2]), (agent.Message{Role: agent.RoleUser, Content: "bash-3 finished"}); !cmp.Equal(got, want) {
		t.Errorf("third request ends with %+v, want %+v", got, want)
	}
	// Notices are durable context: they are in the turn's messages.
	var users []string
	for _, m := range out.Messages {
		if m.Role == agent.RoleUser {
			users = append(users, m.Content)
		}
	}
	if diff := cmp.Diff([]string{"p", "bash-1 finished\nbash-2 finished", "bash-3 finished"}, users); diff != "" {
		t.Errorf("user messages (-want +got):\n%s", diff)
	}
}

func TestRunToolResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		call     agent.ToolCall
		approver agent.Approver
		// wantText is what the model is told.
		wantText string
		wantErr  bool
		wantRan  []string
	}{
		{
			name: "approver rejects", call: tc("c1", "a", `{"command":"rm -rf /"}`),
			approver: agent.ApproverFunc(func(context.Context, agent.CallInfo) (agent.Approval, error) {
				return agent.Approval{Message: "Error: permission denied: the user rejected this command"}, nil
			}),
			wantText: "Error: permission denied: the user rejected this command", wantErr: true,
		},
		{
			name: "approver allows", call: tc("c1", "a", `{"x":1}`),
			approver: agent.ApproverFunc(func(context.Context, agent.CallInfo) (agent.Approval, error) {
				return agent.Approval{Allowed: true}, nil
			}),
			wantText: `ran {"x":1}`, wantRan: []string{`{"x":1}`},
		},
		{
			name: "approver fails", call: tc("c1", "a", `{}`),
			approver: agent.ApproverFunc(func(context.Context, agent.CallInfo) (agent.Approval, error) {
				return agent.Approval{}, errors.New("client went away")
			}),
			wantText: "Error: permission request failed: client went away", wantErr: true,
		},
		{name: "unknown tool", call: tc("c1", "nope", `{}`), wantText: `Error: unknown tool "nope"`, wantErr: true},
		{name: "empty arguments", call: tc("c1", "a", ``), wantText: `ran {}`, wantRan: []string{`{}`}},
		{name: "blank arguments", call: tc("c1", "a", " \n"), wantText: `ran {}`, wantRan: []string{`{}`}},
		{name: "malformed arguments passed as is", call: tc("c1", "a", `{"x":`), wantText: `ran {"x":`, wantRan: []string{`{"x":`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			tool := &fakeTool{name: "a"}
			p := newReplay(t, callTools(tt.call), say("ok"))
			var rec recorder
			out, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Approver: tt.approver, Emit: rec.emit})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != agent.StopEndTurn {
				t.Errorf("stop = %q, want end_turn: the turn goes on", out.Stop)
			}
			if n := len(p.requests()); n != 2 {
				t.Errorf("%d model requests, want 2", n)
			}
			if diff := cmp.Diff(tt.wantRan, tool.argsSeen()); diff != "" {
				t.Errorf("tool runs (-want +got):\n%s", diff)
			}
			want := agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Content: tt.wantText}
			if got := out.Messages[2]; !cmp.Equal(got, want) {
				t.Errorf("tool message = %+v, want %+v", got, want)
			}
			var res *agent.Event
			for _, e := range rec.list() {
				if e.Kind == agent.EventToolResult {
					res = &e
				}
				if e.Kind == agent.EventToolRunning && tt.wantRan == nil {
					t.Errorf("call reported running although it never ran")
				}
			}
			if res == nil || res.Result.Text != tt.wantText || res.Result.IsError != tt.wantErr {
				t.Errorf("result event = %+v, want text %q is-error %v", res, tt.wantText, tt.wantErr)
			}
		})
	}
}

func TestRunApproverCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	tool := &fakeTool{name: "a"}
	p := newReplay(t, callTools(tc("c1", "a", `{}`), tc("c2", "a", `{}`)))
	approver := agent.ApproverFunc(func(ctx context.Context, _ agent.CallInfo) (agent.Approval, error) {
		cancel() // the user cancels while the question is pending
		<-ctx.Done()
		return agent.Approval{}, ctx.Err()
	})
	out, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != agent.StopCancelled {
		t.Errorf("stop = %q, want cancelled", out.Stop)
	}
	if n := len(tool.argsSeen()); n != 0 {
		t.Errorf("tool ran %d times", n)
	}
	for _, m := range out.Messages[2:] {
		if m.Content != "Error: command aborted" {
			t.Errorf("tool message %+v, want command aborted", m)
		}
	}
	if len(out.Messages) != 4 {
		t.Errorf("%d messages, want user + assistant + 2 answers", len(out.Messages))
	}
}

func TestRunLiveOutputEvents(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	tool := &fakeTool{name: "a", run: func(_ context.Context, call invocation) tools.Result {
		call.Live(tools.Chunk{Stream: "stdout", Data: []byte("line 1\n")})
		call.Live(tools.Chunk{Stream: "stderr", Data: []byte("warn\n"), FullOutput: "/spill/err"})
		return tools.Result{Text: "line 1\n[stderr]\nwarn\n"}
	}}
	p := newReplay(t, callTools(tc("c1", "a", `{}`)), say("ok"))
	var rec recorder
	if _, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Emit: rec.emit}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rec.list() {
		if e.Kind == agent.EventToolOutput {
			got = append(got, e.Call.ID+"/"+e.Output.Stream+"/"+string(e.Output.Data)+"/"+e.Output.FullOutput)
		}
	}
	if diff := cmp.Diff([]string{"c1/stdout/line 1\n/", "c1/stderr/warn\n//spill/err"}, got); diff != "" {
		t.Errorf("live output events (-want +got):\n%s", diff)
	}
}

// TestRunPreparesEachCallOnce: a call's arguments are read once; the
// description the editor gets, the subject the approver is asked about and
// the run all come from that one Prepare.
func TestRunPreparesEachCallOnce(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	tool := &fakeTool{name: "a", subject: tools.Shell("make test")}
	p := newReplay(t, callTools(tc("c1", "a", `{"n":1}`), tc("c2", "a", `{"n":2}`)), say("ok"))
	var rec recorder
	var asked []tools.Subject
	approver := agent.ApproverFunc(func(_ context.Context, c agent.CallInfo) (agent.Approval, error) {
		asked = append(asked, c.Call.Subject)
		return agent.Approval{Allowed: true}, nil
	})
	if _, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Approver: approver, Emit: rec.emit}); err != nil {
		t.Fatal(err)
	}
	if n := tool.prepared(); n != 2 {
		t.Errorf("%d prepares for 2 calls, want 2", n)
	}
	if diff := cmp.Diff([]tools.Subject{tools.Shell("make test"), tools.Shell("make test")}, asked); diff != "" {
		t.Errorf("approver asked about (-want +got):\n%s", diff)
	}
	for _, e := range rec.list() {
		want := tools.Call{Title: `a {"n":1}`, Kind: "execute", Subject: tools.Shell("make test")}
		if e.Call.ID == "c2" {
			want.Title = `a {"n":2}`
		}
		if diff := cmp.Diff(want, e.Call.Call); e.Kind != agent.EventText && e.Kind != agent.EventUsage && diff != "" {
			t.Errorf("event %d of %s: call (-want +got):\n%s", e.Kind, e.Call.ID, diff)
		}
	}
}

// TestRunSkippedResults: a call answered without running gets the tool's
// own skipped result (its raw output), and an unknown tool's says only that
// it is an error.
func TestRunSkippedResults(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	tool := &fakeTool{name: "a", skip: func(text string) tools.Result {
		return tools.Result{Text: text, IsError: true, Raw: map[string]any{"cwd": "/w", "isError": true}}
	}}
	p := newReplay(t, callTools(tc("c1", "a", `{}`), tc("c2", "nope", `{}`)), say("ok"))
	var rec recorder
	refuse := agent.ApproverFunc(func(context.Context, agent.CallInfo) (agent.Approval, error) {
		return agent.Approval{Message: "Error: refused"}, nil
	})
	if _, err := newLoop(t, p, tool).Run(ctx, agent.Turn{Prompt: "p", Approver: refuse, Emit: rec.emit}); err != nil {
		t.Fatal(err)
	}
	got := map[string]tools.Result{}
	for _, e := range rec.list() {
		if e.Kind == agent.EventToolResult {
			got[e.Call.ID] = e.Result
		}
	}
	want := map[string]tools.Result{
		"c1": {Text: "Error: refused", IsError: true, Raw: map[string]any{"cwd": "/w", "isError": true}},
		"c2": {Text: `Error: unknown tool "nope"`, IsError: true, Raw: tools.ErrorOutput{IsError: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if ran := tool.argsSeen(); len(ran) != 0 {
		t.Errorf("refused call ran: %q", ran)
	}
}
