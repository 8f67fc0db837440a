package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

// pinnedWindow is the window of these tests: 1000 tokens for the
// conversation beside the system prompt (about 720 tokens) under the
// compaction threshold (80 %).
const pinnedWindow = 1775

// A prompt larger than the share of the window a compaction keeps (a pasted
// log) is never summarized: the summary covers what came before it, and the
// model is sent the prompt word for word after the summary.
func TestPromptNeverSummarized(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	history := longHistory(3, 200)
	prompt := "why does this fail?\n" + strings.Repeat("a line of a pasted log\n", 90) // ~520 tokens: over 25 % of the window
	var summaryReq agent.Request
	summarize := func(_ context.Context, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		summaryReq = req
		return agent.Response{Message: agent.Message{Content: "They listed files."}}, nil
	}
	p := newReplay(t, summarize, sayUsage("ok", 600, 5))
	l := newLoop(t, p)
	l.ContextWindow = pinnedWindow
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{History: history, Prompt: prompt, Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	ends := eventsOf(rec.list(), agent.EventCompactionEnd)
	if len(ends) != 1 || ends[0].Err != nil {
		t.Fatalf("compaction ends %+v, want one without error", ends)
	}
	if strings.Contains(summaryReq.Messages[1].Content, "pasted log") {
		t.Errorf("the summary request carries the prompt in hand:\n%s", summaryReq.Messages[1].Content)
	}
	want := []agent.Message{agent.SummaryMessage("They listed files."), {Role: agent.RoleUser, Content: prompt}}
	if diff := cmp.Diff(want, p.requests()[1].Messages[1:]); diff != "" {
		t.Errorf("request after compaction (-want +got):\n%s", diff)
	}
	want = append(want, agent.Message{Role: agent.RoleAssistant, Content: "ok"})
	if diff := cmp.Diff(want, out.History); diff != "" {
		t.Errorf("outcome history (-want +got):\n%s", diff)
	}
}

// A compaction inside a long turn may summarize the turn's own tool calls,
// but the prompt that started the turn stays word for word right after the
// summary.
func TestPromptKeptWhenTheCutFallsAfterIt(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	pad := strings.Repeat("y", 1400)
	var summaryReq agent.Request
	summarize := func(_ context.Context, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		summaryReq = req
		return agent.Response{Message: agent.Message{Content: "Two commands ran."}}, nil
	}
	p := newReplay(t,
		callTools(tc("c1", "a", `{"n":1}`)),
		callTools(tc("c2", "a", `{"n":2}`)),
		summarize,
		sayUsage("done", 300, 5))
	l := newLoop(t, p, &fakeTool{name: "a", run: func(context.Context, invocation) tools.Result { return tools.Result{Text: pad} }})
	l.ContextWindow = pinnedWindow
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{Prompt: "run a twice", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	ends := eventsOf(rec.list(), agent.EventCompactionEnd)
	if len(ends) != 1 || ends[0].Err != nil || !ends[0].Compaction.PromptKept || ends[0].Compaction.PromptAt != 0 {
		t.Fatalf("compaction ends %+v, want one keeping the prompt at 0", ends)
	}
	if strings.Contains(summaryReq.Messages[1].Content, "run a twice") || !strings.Contains(summaryReq.Messages[1].Content, "[tool call c1") {
		t.Errorf("summary request:\n%s", summaryReq.Messages[1].Content)
	}
	last := p.requests()[3].Messages[1:]
	if len(last) < 2 || last[0].Content != agent.SummaryMessage("Two commands ran.").Content || last[1].Content != "run a twice" || last[1].Role != agent.RoleUser {
		t.Errorf("request after compaction starts %+v", last)
	}
	if len(out.History) < 2 || out.History[1].Content != "run a twice" {
		t.Errorf("outcome history %+v", out.History)
	}
}

// A prompt that does not fit the window by itself is not sent (it could
// only be summarized) nor kept: the turn ends with an error that says so.
func TestPromptAloneTooLarge(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t)
	l := newLoop(t, p)
	l.ContextWindow = 1000
	var recorded []agent.Message
	out, err := l.Run(ctx, agent.Turn{History: longHistory(1, 10), Prompt: strings.Repeat("big ", 2000),
		Record: func(m agent.Message) { recorded = append(recorded, m) }})
	if !errors.Is(err, agent.ErrContextExceeded) || !strings.Contains(err.Error(), "this prompt alone is about") || !strings.Contains(err.Error(), "never summarized") {
		t.Fatalf("err = %v, want one saying the prompt alone does not fit", err)
	}
	// Not sent, not kept: in the history every later request would carry
	// it and fail the same way.
	if len(out.Messages) != 0 || out.History != nil || len(recorded) != 0 {
		t.Errorf("the prompt was kept: messages %d, history %v, recorded %d", len(out.Messages), out.History != nil, len(recorded))
	}
	if n := len(p.requests()); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}
