package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// requestLog is a provider that answers with answer and keeps every
// request.
type requestLog struct {
	answer func(n int, req agent.Request, emit func(agent.Delta)) (agent.Response, error)

	// mu guards reqs.
	mu   sync.Mutex
	reqs []agent.Request
}

func (r *requestLog) Stream(_ context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	r.mu.Lock()
	n := len(r.reqs)
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.answer(n, req, emit)
}

func (r *requestLog) requests() []agent.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Request(nil), r.reqs...)
}

func TestCommandsAnnounced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	sid, _ := h.newSession(sessions.ModeAsk)
	ups := h.client.allUpdatesOf(sid)
	if len(ups) != 1 || ups[0].AvailableCommandsUpdate == nil {
		t.Fatalf("updates after session/new = %+v, want the commands", ups)
	}
	var names []string
	for _, c := range ups[0].AvailableCommandsUpdate.AvailableCommands {
		hint := ""
		if c.Input != nil && c.Input.Unstructured != nil {
			hint = " <" + c.Input.Unstructured.Hint + ">"
		}
		names = append(names, c.Name+hint)
	}
	want := []string{"compact <optional focus for the summary>", "tasks", "kill <task id, e.g. bash-1>", "plan", "undo <how many changes to undo (default 1)>"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestUsageAndMessageIDs(t *testing.T) {
	t.Parallel()
	p := &requestLog{answer: func(n int, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		emit(agent.Delta{Reasoning: "Thinking."})
		emit(agent.Delta{Text: "Answer "})
		emit(agent.Delta{Text: fmt.Sprint(n)})
		return agent.Response{Message: agent.Message{Content: fmt.Sprint("Answer ", n)}, FinishReason: agent.FinishStop,
			Usage: agent.Usage{PromptTokens: 1000 * (n + 1), CompletionTokens: 20, Reported: true}}, nil
	}}
	h := newHarness(t, harnessOptions{provider: p, contextWindow: 50_000})
	sid, _ := h.newSession(sessions.ModeAsk)
	ids := map[string]string{}
	for n := range 2 {
		before := len(h.client.allUpdatesOf(sid))
		if _, err := h.prompt(sid, "hello"); err != nil {
			t.Fatal(err)
		}
		ups := h.client.allUpdatesOf(sid)[before:]
		if end := ups[len(ups)-1]; end.SessionInfoUpdate == nil || end.SessionInfoUpdate.UpdatedAt == nil {
			t.Fatalf("prompt %d: last update %+v, want session_info_update with updatedAt", n, end)
		}
		ups = ups[:len(ups)-1]
		last := ups[len(ups)-1]
		if last.UsageUpdate == nil || last.UsageUpdate.Used != 1000*(n+1)+20 || last.UsageUpdate.Size != 50_000 || last.UsageUpdate.Meta != nil {
			t.Fatalf("prompt %d: last update %+v, want usage_update %d of 50000", n, last, 1000*(n+1)+20)
		}
		for _, u := range ups {
			key, id := "", ""
			switch {
			case u.AgentThoughtChunk != nil:
				key, id = fmt.Sprint("thought", n), deref(t, u.AgentThoughtChunk.MessageId)
			case u.AgentMessageChunk != nil:
				key, id = fmt.Sprint("answer", n), deref(t, u.AgentMessageChunk.MessageId)
			default:
				continue
			}
			if prev, ok := ids[key]; ok && prev != id {
				t.Errorf("pieces of %s have ids %s and %s", key, prev, id)
			}
			ids[key] = id
		}
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]string{}
	for k, id := range ids {
		if !uuid.MatchString(id) {
			t.Errorf("%s: messageId %q is not a UUID", k, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share messageId %s", k, other, id)
		}
		seen[id] = k
	}
	if len(ids) != 4 {
		t.Errorf("ids = %v, want a thought and an answer per prompt", ids)
	}
	// The usage is the session's: a load shows it (announceCommands).
	s, err := h.reg.Get(string(sid))
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Usage(); u.Used != 2020 || u.Size != 50_000 {
		t.Errorf("session usage = %+v", u)
	}
}

func deref(t *testing.T, p *string) string {
	t.Helper()
	if p == nil {
		t.Error("chunk without messageId")
		return ""
	}
	return *p
}

// TestCompactOverACP: /compact shows a think tool call that completes with
// what it did, the next prompt's model request carries the summary instead
// of the old turns, and a failed compaction leaves the history alone.
func TestCompactOverACP(t *testing.T) {
	t.Parallel()
	summaries := 0
	p := &requestLog{answer: func(_ int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		if len(req.Tools) == 0 { // a summary request
			summaries++
			if summaries == 2 {
				return agent.Response{}, fmt.Errorf("%w: the model is overloaded", agent.ErrProvider)
			}
			return text("They said hello three times."), nil
		}
		return text("Hi!"), nil
	}}
	h := newHarness(t, harnessOptions{provider: p})
	sid, _ := h.newSession(sessions.ModeAsk)
	for range 3 {
		if _, err := h.prompt(sid, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	before := len(h.client.allUpdatesOf(sid))
	resp, err := h.prompt(sid, "/compact greetings")
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("/compact = %+v, %v", resp, err)
	}
	reqs := p.requests()
	if sum := reqs[len(reqs)-1]; len(sum.Tools) != 0 || !strings.Contains(sum.Messages[1].Content, "Focus on: greetings") {
		t.Fatalf("summary request = %+v", sum)
	}
	ups := h.client.allUpdatesOf(sid)[before:]
	if len(ups) != 4 || ups[0].ToolCall == nil || ups[1].ToolCallUpdate == nil || ups[2].UsageUpdate == nil || ups[3].SessionInfoUpdate == nil {
		t.Fatalf("updates of /compact = %+v, want tool_call, tool_call_update, usage_update, session_info_update", ups)
	}
	tc, done := ups[0].ToolCall, ups[1].ToolCallUpdate
	if tc.Kind != acpsdk.ToolKindThink || tc.Title != "Compact conversation" || tc.Status != acpsdk.ToolCallStatusInProgress || done.ToolCallId != tc.ToolCallId {
		t.Errorf("tool call = %+v", tc)
	}
	if done.Status == nil || *done.Status != acpsdk.ToolCallStatusCompleted || len(done.Content) != 1 {
		t.Fatalf("final update = %+v", done)
	}
	content := done.Content[0].Content.Content.Text.Text
	m := regexp.MustCompile(`^(\d+) messages summarized; (\d+) → (\d+) tokens$`).FindStringSubmatch(content)
	if m == nil {
		t.Fatalf("content %q", content)
	}
	meta, _ := json.Marshal(done.Meta)
	want := fmt.Sprintf(`{"contextCompaction":{"postTokens":%s,"preTokens":%s,"trigger":"manual"}}`, m[3], m[2])
	if string(meta) != want {
		t.Errorf("_meta = %s, want %s", meta, want)
	}
	if _, err := h.prompt(sid, "hello"); err != nil {
		t.Fatal(err)
	}
	reqs = p.requests()
	next := reqs[len(reqs)-1].Messages
	if !strings.Contains(next[1].Content, "They said hello three times.") || len(next) >= 8 {
		t.Errorf("request after /compact = %+v, want the summary first and fewer messages", next)
	}

	// A failed compaction: failed tool call, history as it was.
	before = len(h.client.allUpdatesOf(sid))
	histBefore := len(mustSession(t, h, sid).History())
	if _, err := h.prompt(sid, "/compact"); err != nil {
		t.Fatal(err)
	}
	ups = h.client.allUpdatesOf(sid)[before:]
	if len(ups) != 3 || ups[2].SessionInfoUpdate == nil || ups[1].ToolCallUpdate == nil || *ups[1].ToolCallUpdate.Status != acpsdk.ToolCallStatusFailed ||
		!strings.Contains(ups[1].ToolCallUpdate.Content[0].Content.Content.Text.Text, "overloaded") {
		t.Fatalf("updates of a failed /compact = %+v", ups)
	}
	if n := len(mustSession(t, h, sid).History()); n != histBefore {
		t.Errorf("history %d messages after a failed compaction, was %d", n, histBefore)
	}
}

func mustSession(t *testing.T, h *harness, sid acpsdk.SessionId) *sessions.Session {
	t.Helper()
	s, err := h.reg.Get(string(sid))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTaskCommandsFenced: /tasks and /kill answer from the session's own
// tasks without a model request, and another session's /kill is refused.
func TestTaskCommandsFenced(t *testing.T) {
	t.Parallel()
	p := &requestLog{answer: func(n int, _ agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		if n == 0 {
			return bash("c1", "sleep 30", "run_in_background", true), nil
		}
		return text("started"), nil
	}}
	h := newHarness(t, harnessOptions{provider: p})
	a, _ := h.newSession(sessions.ModeAuto)
	b, _ := h.newSession(sessions.ModeAuto)
	if _, err := h.prompt(a, "start a task"); err != nil {
		t.Fatal(err)
	}
	models := len(p.requests())
	answer := func(sid acpsdk.SessionId, prompt string) string {
		t.Helper()
		before := len(h.client.allUpdatesOf(sid))
		resp, err := h.prompt(sid, prompt)
		if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("%s: %+v, %v", prompt, resp, err)
		}
		var out strings.Builder
		for _, u := range h.client.allUpdatesOf(sid)[before:] {
			if u.AvailableCommandsUpdate != nil || u.SessionInfoUpdate != nil {
				continue // a session's first prompt announces them again; every turn ends with its info
			}
			if u.AgentMessageChunk == nil {
				t.Errorf("%s: update %+v, want message chunks only", prompt, u)
				continue
			}
			deref(t, u.AgentMessageChunk.MessageId)
			out.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
		return out.String()
	}
	if got := answer(a, "/tasks"); !regexp.MustCompile("^Background tasks of this session:\n- bash-1 · running · started \\d+s ago · `sleep 30`$").MatchString(got) {
		t.Errorf("/tasks in a: %q", got)
	}
	if got := answer(b, "/tasks"); got != "This session has no background tasks." {
		t.Errorf("/tasks in b: %q", got)
	}
	if got := answer(b, "/kill bash-1"); got != "Error: task bash-1 belongs to another session" {
		t.Errorf("/kill in b: %q", got)
	}
	if got := answer(a, "/kill bash-1"); got != "killed background task bash-1" {
		t.Errorf("/kill in a: %q", got)
	}
	if n := len(p.requests()); n != models {
		t.Errorf("%d model requests for slash commands", n-models)
	}
}

// TestCompactionAcrossRestart: a compaction is stored with the session; a
// load replays its tool call, and the model gets the compacted history
// after the restart, not the whole one.
func TestCompactionAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	answer := func(_ int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		if len(req.Tools) == 0 {
			return text("They asked twice."), nil
		}
		return bash("c1", "echo hi"), nil
	}
	calls := 0
	p1 := &requestLog{answer: func(n int, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		if len(req.Tools) > 0 {
			calls++
			if calls%2 == 0 {
				return text("ok"), nil
			}
		}
		return answer(n, req, emit)
	}}
	h1 := newHarness(t, harnessOptions{provider: p1, store: newStore(t, dir)})
	sid, cwd := h1.newSession(sessions.ModeAuto)
	for _, prompt := range []string{"one", "two", "three"} {
		if _, err := h1.prompt(sid, prompt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h1.prompt(sid, "/compact"); err != nil {
		t.Fatal(err)
	}
	live := mustSession(t, h1, sid).History()
	if _, err := h1.conn.CloseSession(h1.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}

	p2 := &requestLog{answer: func(int, agent.Request, func(agent.Delta)) (agent.Response, error) { return text("fine"), nil }}
	h2 := newHarness(t, harnessOptions{provider: p2, store: newStore(t, dir)})
	if _, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var replayed *acpsdk.SessionToolCallUpdate
	for _, u := range h2.client.allUpdatesOf(sid) {
		if u.ToolCall != nil && u.ToolCall.Title == "Compact conversation" {
			if u.ToolCall.Kind != acpsdk.ToolKindThink {
				t.Errorf("replayed compaction kind %q", u.ToolCall.Kind)
			}
		}
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.Meta["contextCompaction"] != nil {
			replayed = u.ToolCallUpdate
		}
	}
	if replayed == nil || !strings.Contains(replayed.Content[0].Content.Content.Text.Text, "messages summarized") {
		t.Fatalf("load replayed no compaction: %+v", h2.client.allUpdatesOf(sid))
	}
	if diff := cmp.Diff(live, mustSession(t, h2, sid).History()); diff != "" {
		t.Errorf("history after the restart (-live +loaded):\n%s", diff)
	}
	if _, err := h2.prompt(sid, "four"); err != nil {
		t.Fatal(err)
	}
	sent := p2.requests()[0].Messages[1:]
	if !strings.Contains(sent[0].Content, "They asked twice.") || len(sent) != len(live)+1 {
		t.Errorf("request after the restart = %+v, want the compacted history and the prompt", sent)
	}
}
