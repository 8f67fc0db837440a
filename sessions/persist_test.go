package sessions_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestMakeTitle(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, tc := range []struct{ in, want string }{
		{"fix the build\nand more", "fix the build"},
		{"\n\n  spaced   out  \n", "spaced out"},
		{long, strings.TrimSpace(strings.Repeat("word ", 16))},
		{strings.Repeat("x", 100), strings.Repeat("x", 80)},
		{"```go\nfunc main() {}\n```\nwhy does this not build?", "why does this not build?"},
		{"~~~\n\n~~~\n\nexplain", "explain"},
	} {
		got := sessions.MakeTitle(tc.in)
		if got != tc.want || len([]rune(got)) > sessions.TitleMax {
			t.Errorf("MakeTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A session stored, reopened: the history is the live one; a call whose
// result was never written (killed mid-call) is answered "aborted", and
// the notices delivered in a request come back as its one user message.
func TestHistoryFromStore(t *testing.T) {
	dir := t.TempDir()
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []agent.Message{
		{Role: agent.RoleUser, Content: "hello"},
		{Role: agent.RoleAssistant, ReasoningContent: "think", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "c2", Name: "bash", Arguments: `{`}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "a\nb"},
	}
	s.AddPrompt(msgs[0].Content, nil, nil)
	s.AddMessage(msgs[1], nil, false)
	s.AddMessage(msgs[2], &sessions.ToolView{Title: "ls", Kind: "execute", Status: "completed"}, false)
	reg.Notify(s.ID, "n1")
	reg.Notify(s.ID, "n2")
	s.DrainNotices()
	s.Remember("go test")
	if err := s.SetMode(sessions.ModeAuto); err != nil {
		t.Fatal(err)
	}
	reg.Notify(s.ID, "pending")
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}

	reg2 := sessions.New(sessions.Options{Store: st})
	cwd := t.TempDir()
	l, err := reg2.Open(s.ID, cwd, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append(msgs,
		agent.Message{Role: agent.RoleTool, ToolCallID: "c2", Content: "Error: command aborted"},
		agent.Message{Role: agent.RoleUser, Content: "n1\nn2"})
	if diff := cmp.Diff(want, l.Session.History()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if l.Session.Cwd != cwd || l.Session.Mode() != sessions.ModeAuto || !l.Session.Remembered()["go test"] || l.Session.Title() != "hello" {
		t.Errorf("settings: cwd %q mode %q allowed %v title %q", l.Session.Cwd, l.Session.Mode(), l.Session.Remembered(), l.Session.Title())
	}
	if got := l.Session.DrainNotices(); !cmp.Equal(got, []string{"pending"}) {
		t.Errorf("undelivered notices %q", got)
	}
	again, err := reg2.Open(s.ID, cwd, nil)
	if err != nil || !again.WasLive || again.Session != l.Session {
		t.Errorf("second open = %+v, %v; want the live session", again, err)
	}
	if _, err := sessions.New(sessions.Options{Store: st}).Open("nope", cwd, nil); err == nil {
		t.Error("open of an unknown id succeeded")
	}
	reg2.CloseAll()
}

// A compaction that kept the prompt in hand word for word, although the
// cut fell after it, rebuilds the same history after a restart: the
// summary, the prompt, then the kept messages.
func TestHistoryKeepsThePromptAfterACompaction(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	conv := []agent.Message{
		{Role: agent.RoleUser, Content: "an earlier prompt"},
		{Role: agent.RoleAssistant, Content: "an earlier answer"},
		{Role: agent.RoleUser, Content: "the prompt in hand"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "many files"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c2", Name: "bash", Arguments: `{"command":"pwd"}`}}},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "/w"},
	}
	for _, m := range conv {
		if m.Role == agent.RoleUser {
			s.AddPrompt(m.Content, nil, nil)
		} else {
			s.AddMessage(m, nil, false)
		}
	}
	// The cut falls at the second call: the prompt (index 2) is kept.
	s.AddCompaction(agent.Compaction{ID: "compact-1", Trigger: agent.TriggerAuto, Summary: "Files were listed.",
		KeptFrom: 5, Kept: 2, PromptKept: true, PromptAt: 2})
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	reg2 := sessions.New(sessions.Options{Store: st})
	defer reg2.CloseAll()
	l, err := reg2.Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]agent.Message{agent.SummaryMessage("Files were listed."), conv[2]}, conv[5:]...)
	if diff := cmp.Diff(want, l.Session.History()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// Images come back after a restart wherever they were: on the prompt a
// compaction kept word for word, and on a tool result (an MCP tool's) it
// kept; each is stored once, however often it was sent.
func TestImagesAfterACompaction(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	png := agent.Image{MimeType: "image/png", Data: base64.StdEncoding.EncodeToString([]byte("\x89PNG a picture")), Name: "shot.png"}
	shot := png
	shot.Name = "mcp__pics__shot result image 1"
	conv := []agent.Message{
		{Role: agent.RoleUser, Content: "an earlier prompt"},
		{Role: agent.RoleAssistant, Content: "an earlier answer"},
		{Role: agent.RoleUser, Content: "what is on this?", Images: []agent.Image{png}},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "many files"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c2", Name: "mcp__pics__shot", Arguments: `{}`}}},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "[image: image/png, 16 B]", Images: []agent.Image{shot}},
	}
	for _, m := range conv {
		if m.Role == agent.RoleUser {
			s.AddPrompt(m.Content, nil, m.Images)
		} else {
			s.AddMessage(m, nil, false)
		}
	}
	s.AddCompaction(agent.Compaction{ID: "compact-1", Trigger: agent.TriggerAuto, Summary: "Files were listed.",
		KeptFrom: 5, Kept: 2, PromptKept: true, PromptAt: 2})
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	reg2 := sessions.New(sessions.Options{Store: st})
	defer reg2.CloseAll()
	l, err := reg2.Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]agent.Message{agent.SummaryMessage("Files were listed."), conv[2]}, conv[5:]...)
	if diff := cmp.Diff(want, l.Session.History()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	files, err := os.ReadDir(filepath.Join(st.Dir(), "sessions", s.ID+".images"))
	if err != nil || len(files) != 1 {
		t.Errorf("images stored: %v (%v), want the one image once", files, err)
	}
}

// The plan is part of the session: the last one set comes back after a
// reopen, and setting the same plan again stores nothing new.
func TestPlanFromStore(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Plan() != nil {
		t.Fatalf("new session has a plan: %+v", s.Plan())
	}
	first := &tools.Plan{Entries: []tools.PlanEntry{{Step: "a", Status: "in_progress"}}}
	last := &tools.Plan{Explanation: "now b", Entries: []tools.PlanEntry{{Step: "a", Status: "completed"}, {Step: "b", Status: "in_progress"}}}
	s.SetPlan(first)
	s.SetPlan(last)
	s.SetPlan(&tools.Plan{Explanation: "now b", Entries: []tools.PlanEntry{{Step: "a", Status: "completed"}, {Step: "b", Status: "in_progress"}}})
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	reg2 := sessions.New(sessions.Options{Store: st})
	l, err := reg2.Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.CloseAll()
	if d := cmp.Diff(last, l.Session.Plan()); d != "" {
		t.Errorf("plan after reopen (-want +got):\n%s", d)
	}
	n := 0
	for r := range l.Replay {
		if r.Plan != nil {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d plans replayed, want 2 (the same plan again is not stored)", n)
	}
}

// Compactions that kept nothing rebuild, after a restart, as the last
// one's summary and what came after it: nothing from before it, not even
// the answer of a call left open there.
func TestHistoryAfterCompactionsThatKeptNothing(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.AddPrompt("first", nil, nil)
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, Content: "one"}, nil, false)
	s.AddCompaction(agent.Compaction{ID: "compact-1", Trigger: agent.TriggerAuto, Summary: "First summary.", KeptFrom: 2})
	s.AddPrompt("second", nil, nil)
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}}, nil, false)
	s.AddCompaction(agent.Compaction{ID: "compact-2", Trigger: agent.TriggerManual, Summary: "Second summary.", KeptFrom: 2})
	after := []agent.Message{
		{Role: agent.RoleUser, Content: "third"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c2", Name: "bash", Arguments: `{"command":"pwd"}`}}},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "/w"},
	}
	s.AddPrompt(after[0].Content, nil, nil)
	s.AddMessage(after[1], nil, false)
	s.AddMessage(after[2], nil, false)
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	reg2 := sessions.New(sessions.Options{Store: st})
	defer reg2.CloseAll()
	l, err := reg2.Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]agent.Message{agent.SummaryMessage("Second summary.")}, after...)
	if diff := cmp.Diff(want, l.Session.History()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	// The replay still shows the whole log, both compactions included.
	var kinds []string
	for r := range l.Replay {
		switch {
		case r.Prompt != nil:
			kinds = append(kinds, "prompt "+r.Prompt.Text)
		case r.Compaction != nil:
			kinds = append(kinds, "compaction "+r.Compaction.ID)
		}
	}
	wantKinds := []string{"prompt first", "compaction compact-1", "prompt second", "compaction compact-2", "prompt third"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("replayed steps (-want +got):\n%s", diff)
	}
}
