package sessions_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// noticedView is a notice's tool call as acp stores it, with one diff
// whose new text is newText.
func noticedView(t *testing.T, newText string) sessions.NoticedView {
	t.Helper()
	content, err := json.Marshal([]any{
		map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "```console\nbackground bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.\n```"}},
		map[string]any{"type": "diff", "path": "/p/bg.txt", "newText": newText},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sessions.NoticedView{
		ID: "notice-1", TaskID: "bash-1", Title: "Background task bash-1 finished", Kind: "execute", Status: "completed",
		Text:      "background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.",
		Content:   content,
		Locations: json.RawMessage(`[{"line":0,"path":"/p/bg.txt"}]`),
		RawOutput: json.RawMessage(`{"changedFiles":1,"exitCode":0,"taskId":"bash-1"}`),
	}
}

// storeNoticed stores a turn that ends with the notice's tool call v in a
// new session and returns the session's id and how many bytes the call
// added to its log.
func storeNoticed(t *testing.T, st *store.Store, v sessions.NoticedView) (string, int64) {
	t.Helper()
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.AddPrompt("did it finish?", nil, nil)
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, Content: "It finished."}, nil, false)
	s.Sync()
	path := filepath.Join(st.Dir(), "sessions", s.ID+".jsonl")
	before := fileSize(t, path)
	s.AddNoticed(v)
	s.Sync()
	grown := fileSize(t, path) - before
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	return s.ID, grown
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// storedNoticed is the one noticed entry of session id's log.
func storedNoticed(t *testing.T, st *store.Store, id string) store.Noticed {
	t.Helper()
	sess, err := st.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var got []store.Noticed
	for _, e := range sess.Entries() {
		if e.Kind != store.KindNoticed {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.(store.Noticed))
	}
	if len(got) != 1 {
		t.Fatalf("%d noticed entries, want 1: %+v", len(got), got)
	}
	return got[0]
}

// replayOf is the replay of session id, loaded in a new registry (a
// restart).
func replayOf(t *testing.T, st *store.Store, id string) []sessions.Replayed {
	t.Helper()
	reg := sessions.New(sessions.Options{Store: st})
	t.Cleanup(reg.CloseAll)
	l, err := reg.Open(id, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []sessions.Replayed
	for r := range l.Replay {
		got = append(got, r)
	}
	return got
}

// TestNoticedStored: a notice's tool call is stored as the editor got it,
// and replayed after a restart in its place in the turn, the same; the
// model's history does not hold it.
func TestNoticedStored(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v := noticedView(t, "one\ntwo\n")
	id, _ := storeNoticed(t, st, v)

	want := store.Noticed{CallID: v.ID, TaskID: v.TaskID, Text: v.Text, Title: v.Title, ToolKind: v.Kind, Status: v.Status,
		Content: v.Content, Locations: v.Locations, RawOutput: v.RawOutput}
	if diff := cmp.Diff(want, storedNoticed(t, st, id)); diff != "" {
		t.Errorf("stored entry (-want +got):\n%s", diff)
	}
	got := replayOf(t, st, id)
	wantReplay := []sessions.Replayed{
		{Prompt: &sessions.ReplayedPrompt{Text: "did it finish?"}},
		{Message: &sessions.ReplayedMessage{Text: "It finished."}},
		{Noticed: &v},
	}
	if diff := cmp.Diff(wantReplay, got); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
}

// TestNoticedCap: a notice's tool call adds at most CallMax bytes to
// the log: one just under it is kept whole; one over it is kept without
// its diffs and locations, and replayed as the notice's text (its
// rawOutput kept).
func TestNoticedCap(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// '<' is escaped in JSON (6 bytes): the cap counts the bytes written.
	under := noticedView(t, strings.Repeat("a<", (sessions.CallMax-4<<10)/7))
	id, grown := storeNoticed(t, st, under)
	t.Logf("a call just under the cap: the log grew by %d bytes", grown)
	if grown > sessions.CallMax {
		t.Errorf("a call just under the cap grew the log by %d bytes, over %d", grown, sessions.CallMax)
	}
	if got := storedNoticed(t, st, id); string(got.Content) != string(under.Content) || string(got.Locations) != string(under.Locations) {
		t.Errorf("a call just under the cap (%d bytes) was not kept whole: content %d bytes, locations %s", grown, len(got.Content), got.Locations)
	}

	over := noticedView(t, strings.Repeat("x", 2<<20))
	id, grown = storeNoticed(t, st, over)
	t.Logf("a call over the cap: the log grew by %d bytes", grown)
	if grown > sessions.CallMax || grown == 0 {
		t.Errorf("a call over the cap grew the log by %d bytes, want 1..%d", grown, sessions.CallMax)
	}
	stored := storedNoticed(t, st, id)
	if stored.Content != nil || stored.Locations != nil || stored.Text != over.Text || string(stored.RawOutput) != string(over.RawOutput) {
		t.Errorf("a call over the cap stored as %+v", stored)
	}
	capped := over
	capped.Content, capped.Locations = nil, nil
	got := replayOf(t, st, id)
	if len(got) != 3 || !cmp.Equal(got[2].Noticed, &capped) {
		t.Errorf("replay of a call over the cap: %s", cmp.Diff([]sessions.Replayed{{}, {}, {Noticed: &capped}}, got))
	}
}

// TestToolViewCap: a bash call whose output and diffs the editor was shown
// in full adds at most CallMax to the log; past it the editor's copy is
// dropped (a replay shows the output fenced) and the model's text is kept.
func TestToolViewCap(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	t.Cleanup(reg.CloseAll)
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.AddPrompt("change it", nil, nil)
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"x"}`}}}, nil, false)
	s.Sync()
	path := filepath.Join(st.Dir(), "sessions", s.ID+".jsonl")
	before := fileSize(t, path)
	// The output as the model reads it (its tail: '<' escapes to 6 bytes)
	// and, in the view, again fenced, beside a diff just under the bash
	// tools' own budget.
	out := strings.Repeat("<", 32<<10)
	content, err := json.Marshal([]any{
		map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "```console\n" + out + "\n```"}},
		map[string]any{"type": "diff", "path": "/p/big.txt", "newText": strings.Repeat("y", 768<<10)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Content: out},
		&sessions.ToolView{Title: "x", Kind: "execute", Status: "completed", Content: content, Locations: json.RawMessage(`[{"line":0,"path":"/p/big.txt"}]`)}, false)
	s.Sync()
	if grown := fileSize(t, path) - before; grown > sessions.CallMax {
		t.Errorf("one call grew the log by %d bytes, over %d", grown, sessions.CallMax)
	}
	id := s.ID
	if err := reg.Close(id); err != nil {
		t.Fatal(err)
	}
	sess, err := st.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	found := false
	for _, e := range sess.Entries() {
		if e.Kind != store.KindToolResult {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		r := p.(store.ToolResult)
		found = true
		if r.Text != out || r.Content != nil || r.Locations != nil {
			t.Errorf("stored: text %d bytes (want %d), content %d bytes, locations %s", len(r.Text), len(out), len(r.Content), r.Locations)
		}
	}
	if !found {
		t.Fatal("no tool result stored")
	}
}
