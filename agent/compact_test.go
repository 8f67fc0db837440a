package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

// sayUsage answers with text and reports usage.
func sayUsage(text string, prompt, completion int) step {
	return func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: text}, FinishReason: agent.FinishStop,
			Usage: agent.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion, Reported: true}}, nil
	}
}

func exceeded() step {
	return func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{}, fmt.Errorf("%w: %w: maximum context length is 1000 tokens", agent.ErrProvider, agent.ErrContextExceeded)
	}
}

func eventsOf(events []agent.Event, kind agent.EventKind) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// longHistory is n turns of a prompt, a tool call, its result and an
// answer, each about size bytes.
func longHistory(n, size int) []agent.Message {
	var h []agent.Message
	pad := strings.Repeat("x", size)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("c%d", i)
		h = append(h,
			agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("prompt %d %s", i, pad)},
			agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: "bash", Arguments: `{"command":"ls"}`}}},
			agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: "result " + pad},
			agent.Message{Role: agent.RoleAssistant, Content: fmt.Sprintf("answer %d", i)},
		)
	}
	return h
}

func TestUsageAfterEachResponse(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, callTools(tc("c1", "a", `{}`)), sayUsage("done", 1200, 34))
	l := newLoop(t, p, &fakeTool{name: "a"})
	l.ContextWindow = 64_000
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{Prompt: "hi", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	us := eventsOf(rec.list(), agent.EventUsage)
	if len(us) != 2 {
		t.Fatalf("%d usage events, want one per response (2)", len(us))
	}
	if u := us[0].Usage; !u.Estimated || u.Size != 64_000 || u.Used <= 0 {
		t.Errorf("first usage (no usage reported) = %+v, want an estimate over a 64000 window", u)
	}
	want := agent.ContextUsage{Used: 1234, Size: 64_000}
	if diff := cmp.Diff(want, us[1].Usage); diff != "" {
		t.Errorf("reported usage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, out.Usage); diff != "" {
		t.Errorf("outcome usage (-want +got):\n%s", diff)
	}
	if out.History != nil {
		t.Errorf("History = %v without a compaction", out.History)
	}
}

func TestMessageIDs(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	first := func(_ context.Context, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		emit(agent.Delta{Reasoning: "think "})
		emit(agent.Delta{Reasoning: "more"})
		emit(agent.Delta{Text: "Let me "})
		emit(agent.Delta{Text: "look."})
		return agent.Response{Message: agent.Message{Content: "Let me look.", ToolCalls: []agent.ToolCall{tc("c1", "a", `{}`)}}, FinishReason: agent.FinishToolCalls}, nil
	}
	second := func(_ context.Context, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		emit(agent.Delta{Text: "Done."})
		return agent.Response{Message: agent.Message{Content: "Done."}, FinishReason: agent.FinishStop}, nil
	}
	var rec recorder
	if _, err := newLoop(t, newReplay(t, first, second), &fakeTool{name: "a"}).Run(ctx, agent.Turn{Prompt: "p", Emit: rec.emit}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range rec.list() {
		if e.Kind == agent.EventText || e.Kind == agent.EventThought {
			if len(e.MessageID) != 36 {
				t.Errorf("message id %q is not a UUID", e.MessageID)
			}
			ids = append(ids, e.MessageID)
		}
	}
	if len(ids) != 5 {
		t.Fatalf("%d pieces, want 5", len(ids))
	}
	thought, answer, later := ids[0], ids[2], ids[4]
	if ids[1] != thought || ids[3] != answer {
		t.Errorf("pieces of one message have different ids: %v", ids)
	}
	if thought == answer || answer == later || thought == later {
		t.Errorf("a thought, its answer and the next answer share ids: %v", ids)
	}
}

func TestAutoCompactionAtThreshold(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	history := longHistory(4, 200)
	var summaryReq agent.Request
	summarize := func(_ context.Context, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		summaryReq = req
		return agent.Response{Message: agent.Message{Content: "They listed files four times."}}, nil
	}
	p := newReplay(t, summarize, sayUsage("ok", 300, 5))
	l := newLoop(t, p)
	l.ContextWindow = 1000
	var rec recorder
	// The last request of the session was 900 tokens: the next one passes
	// 80 % of 1000.
	out, err := l.Run(ctx, agent.Turn{History: history, Prompt: "and now?", Usage: agent.ContextUsage{Used: 900, Size: 1000}, Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	if summaryReq.Tools != nil || len(summaryReq.Messages) != 2 || summaryReq.Messages[0].Role != agent.RoleSystem {
		t.Fatalf("summary request = %+v, want a system prompt and one user message, no tools", summaryReq)
	}
	for _, want := range []string{"prompt 1", "answer 3", "[tool call c1: bash"} {
		if !strings.Contains(summaryReq.Messages[1].Content, want) {
			t.Errorf("summary request lacks %q", want)
		}
	}
	starts, ends := eventsOf(rec.list(), agent.EventCompactionStart), eventsOf(rec.list(), agent.EventCompactionEnd)
	if len(starts) != 1 || len(ends) != 1 || ends[0].Err != nil {
		t.Fatalf("compaction events: %d starts, %d ends (%v), want one of each without error", len(starts), len(ends), ends)
	}
	c := ends[0].Compaction
	if c.Trigger != agent.TriggerAuto || c.ID == "" || c.ID != starts[0].Compaction.ID || c.PreTokens <= c.PostTokens {
		t.Errorf("compaction = %+v", c)
	}
	// The kept part starts at a turn boundary and ends with this turn.
	conv := append(append([]agent.Message(nil), history...), agent.Message{Role: agent.RoleUser, Content: "and now?"})
	if c.KeptFrom <= 0 || c.KeptFrom >= len(conv) || conv[c.KeptFrom].Role != agent.RoleUser {
		t.Fatalf("KeptFrom = %d, want a user message inside the conversation", c.KeptFrom)
	}
	want := append([]agent.Message{agent.SummaryMessage("They listed files four times.")}, conv[c.KeptFrom:]...)
	if diff := cmp.Diff(want, p.requests()[1].Messages[1:]); diff != "" {
		t.Errorf("request after compaction (-want +got):\n%s", diff)
	}
	want = append(want, agent.Message{Role: agent.RoleAssistant, Content: "ok"})
	if diff := cmp.Diff(want, out.History); diff != "" {
		t.Errorf("outcome history (-want +got):\n%s", diff)
	}
}

func TestNoCompactionBelowThreshold(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, say("ok"))
	l := newLoop(t, p)
	l.ContextWindow = 1000
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{History: longHistory(2, 10), Prompt: "p", Usage: agent.ContextUsage{Used: 700, Size: 1000}, Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(eventsOf(rec.list(), agent.EventCompactionStart)); n != 0 || out.History != nil || len(p.requests()) != 1 {
		t.Errorf("%d compactions, %d requests below the threshold", n, len(p.requests()))
	}
}

func TestContextExceededCompactsAndRetries(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, exceeded(), say("summary"), say("fits now"))
	l := newLoop(t, p)
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{History: longHistory(3, 50), Prompt: "p", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != agent.StopEndTurn || len(p.requests()) != 3 {
		t.Fatalf("stop %q after %d requests, want end_turn after 3 (request, summary, retry)", out.Stop, len(p.requests()))
	}
	if got := p.requests()[2].Messages[1]; !cmp.Equal(got, agent.SummaryMessage("summary")) {
		t.Errorf("retry starts with %+v, want the summary", got)
	}
	if out.History == nil || out.History[len(out.History)-1].Content != "fits now" {
		t.Errorf("history = %+v", out.History)
	}
}

func TestContextExceededTwiceEndsTheTurn(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, exceeded(), say("summary"), exceeded())
	var rec recorder
	_, err := newLoop(t, p).Run(ctx, agent.Turn{History: longHistory(3, 50), Prompt: "p", Emit: rec.emit})
	if !errors.Is(err, agent.ErrContextExceeded) || !errors.Is(err, agent.ErrProvider) || !strings.Contains(err.Error(), "even after compacting") {
		t.Fatalf("err = %v, want a context-exceeded provider error that says compacting did not help", err)
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("%d requests, want 3: no second compaction, no loop", n)
	}
}

func TestCompactCommand(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	history := longHistory(3, 10)
	p := newReplay(t, say("the summary"))
	var rec recorder
	out, err := newLoop(t, p).Run(ctx, agent.Turn{History: history, Prompt: "/compact the build errors", Emit: rec.emit})
	if err != nil || out.Stop != agent.StopEndTurn {
		t.Fatalf("Run = %v, %v", out.Stop, err)
	}
	reqs := p.requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[1].Content, "Focus on: the build errors") {
		t.Fatalf("requests = %+v, want one summary request with the focus", reqs)
	}
	if len(out.Messages) != 0 {
		t.Errorf("the command added %v to the history", out.Messages)
	}
	ends := eventsOf(rec.list(), agent.EventCompactionEnd)
	if len(ends) != 1 || ends[0].Compaction.Trigger != agent.TriggerManual || ends[0].Compaction.Focus != "the build errors" {
		t.Fatalf("compaction end events = %+v", ends)
	}
	want := append([]agent.Message{agent.SummaryMessage("the summary")}, history[ends[0].Compaction.KeptFrom:]...)
	if diff := cmp.Diff(want, out.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if u := eventsOf(rec.list(), agent.EventUsage); len(u) != 1 || !u[0].Usage.Estimated {
		t.Errorf("usage after /compact = %+v, want one estimate", u)
	}
}

func TestCompactCommandFailureKeepsHistory(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t, func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{}, fmt.Errorf("%w: the model is overloaded", agent.ErrProvider)
	})
	var rec recorder
	out, err := newLoop(t, p).Run(ctx, agent.Turn{History: longHistory(2, 10), Prompt: "/compact", Emit: rec.emit})
	if err != nil || out.Stop != agent.StopEndTurn {
		t.Fatalf("Run = %v, %v; a failed /compact ends the turn normally", out.Stop, err)
	}
	ends := eventsOf(rec.list(), agent.EventCompactionEnd)
	if len(ends) != 1 || ends[0].Err == nil || !strings.Contains(ends[0].Err.Error(), "overloaded") {
		t.Fatalf("end events = %+v, want one failure naming the cause", ends)
	}
	if out.History != nil {
		t.Errorf("history replaced after a failed compaction: %v", out.History)
	}
}

func TestCompactNothing(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t)
	var rec recorder
	out, err := newLoop(t, p).Run(ctx, agent.Turn{Prompt: "/compact", Emit: rec.emit})
	if err != nil || out.History != nil || len(p.requests()) != 0 {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if got := brief(rec.list()); len(got) != 1 || !strings.HasPrefix(got[0], "text:Nothing to compact") {
		t.Errorf("events = %v", got)
	}
}

// TestCompactionNeverSplitsACall: wherever the cut falls, the kept part
// never starts with a tool result, so every result keeps its call.
func TestCompactionNeverSplitsACall(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	for _, window := range []int{100, 400, 1000, 4000, 20000} {
		p := newReplay(t, say("s"))
		l := newLoop(t, p)
		l.ContextWindow = window
		// One long turn of many calls: the cut must fall inside it.
		h := []agent.Message{{Role: agent.RoleUser, Content: "do it all"}}
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("c%d", i)
			h = append(h, agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: "a", Arguments: "{}"}, {ID: id + "b", Name: "a", Arguments: "{}"}}},
				agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: strings.Repeat("y", 100)},
				agent.Message{Role: agent.RoleTool, ToolCallID: id + "b", Content: strings.Repeat("z", 100)})
		}
		out, err := l.Run(ctx, agent.Turn{History: h, Prompt: "/compact"})
		if err != nil || out.History == nil {
			t.Fatalf("window %d: %v, history %v", window, err, out.History)
		}
		if len(out.History) > 1 && out.History[1].Role == agent.RoleTool {
			t.Errorf("window %d: kept part starts with a tool result", window)
		}
	}
}

func TestParseCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, name, arg string
		ok            bool
	}{
		{"/compact", "compact", "", true},
		{"  /compact  the tests \n", "compact", "the tests", true},
		{"/compact\nfocus", "compact", "focus", true},
		{"/tasks", "tasks", "", true},
		{"/kill bash-3", "kill", "bash-3", true},
		{"/compacted", "", "", false},
		{"/help", "", "", false},
		{"please /compact", "", "", false},
		{"/", "", "", false},
	} {
		name, arg, ok := agent.ParseCommand(c.in)
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("ParseCommand(%q) = %q, %q, %v; want %q, %q, %v", c.in, name, arg, ok, c.name, c.arg, c.ok)
		}
	}
}

type fakeTasks struct{ killed []string }

func (f *fakeTasks) ListTasks(c tools.Caller) string { return "tasks of " + c.SessionID }
func (f *fakeTasks) KillTask(c tools.Caller, id string) string {
	f.killed = append(f.killed, id)
	return "killed " + id + " for " + c.SessionID
}

func TestTaskCommandsAskNoModel(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t) // any request fails the test
	l := newLoop(t, p)
	ft := &fakeTasks{}
	l.Tasks = ft
	for _, c := range []struct{ prompt, want string }{
		{"/tasks", "text:tasks of s1"},
		{"/kill bash-2", "text:killed bash-2 for s1"},
		{"/kill", "text:Usage: /kill <task-id> (see /tasks for the ids)"},
	} {
		var rec recorder
		out, err := l.Run(ctx, agent.Turn{Caller: tools.Caller{SessionID: "s1"}, Prompt: c.prompt, Emit: rec.emit})
		if err != nil || out.Stop != agent.StopEndTurn || len(out.Messages) != 0 {
			t.Fatalf("%s: %+v, %v", c.prompt, out, err)
		}
		if diff := cmp.Diff([]string{c.want}, brief(rec.list())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.prompt, diff)
		}
	}
	// Any other /word is a prompt for the model.
	p2 := newReplay(t, say("hi"))
	if _, err := newLoop(t, p2).Run(ctx, agent.Turn{Prompt: "/help me"}); err != nil || len(p2.requests()) != 1 {
		t.Errorf("/help: %v, %d requests", err, len(p2.requests()))
	}
}
