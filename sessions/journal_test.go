package sessions_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// addCall records a tool call of s that changed path from before.
func addCall(s *sessions.Session, id, path, before string) {
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: "bash", Arguments: "{}"}}}, nil, false)
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: "(no output)"},
		&sessions.ToolView{Title: "call " + id, Changed: []tools.FileChange{{Path: path, Existed: true, Exists: true, Before: &before, AfterSize: 1}}}, false)
}

// ids are the call ids of recs, in order.
func ids(recs []tools.ChangeRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.CallID)
	}
	return out
}

// The undo journal: calls' changes newest first; an /undo's record is the
// only one Last gives while it is the newest, Redone drops it (what it
// undid is the newest again), and the next call's change makes it final
// (it goes with what it undid). Every step is stored: a session loaded
// after a restart has the same journal.
func TestChangeJournal(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := s.Changes()
	if got := log.Last(5); len(got) != 0 {
		t.Fatalf("Last of a new session = %v, want none", got)
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		addCall(s, id, "/p/"+id, "before "+id)
	}
	// A call that changed nothing is no change.
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: "c4", Content: "x"}, &sessions.ToolView{Title: "nothing"}, false)
	if diff := cmp.Diff([]string{"c3", "c2"}, ids(log.Last(2))); diff != "" {
		t.Errorf("Last(2) (-want +got):\n%s", diff)
	}
	if log.Redone() {
		t.Error("Redone with no /undo newest = true")
	}
	if !log.Undone(tools.ChangeRecord{CallID: "u1", Files: []tools.FileChange{{Path: "/p/c3"}}, Undid: 1}) {
		t.Fatal("Undone = false")
	}
	if log.Undone(tools.ChangeRecord{CallID: "u2", Undid: 1}) {
		t.Error("an /undo over an /undo was recorded")
	}
	if diff := cmp.Diff([]string{"u1"}, ids(log.Last(3))); diff != "" {
		t.Errorf("Last(3) after an /undo (-want +got):\n%s", diff)
	}
	if !log.Redone() {
		t.Fatal("Redone = false")
	}
	if diff := cmp.Diff([]string{"c3", "c2", "c1"}, ids(log.Last(3))); diff != "" {
		t.Errorf("Last(3) after the /undo was put back (-want +got):\n%s", diff)
	}
	if !log.Undone(tools.ChangeRecord{CallID: "u3", Files: []tools.FileChange{{Path: "/p/c3"}, {Path: "/p/c2"}}, Undid: 2}) {
		t.Fatal("Undone = false")
	}
	addCall(s, "c5", "/p/c5", "before c5")
	want := []string{"c5", "c1"}
	if diff := cmp.Diff(want, ids(log.Last(5))); diff != "" {
		t.Errorf("Last(5) after a call made the /undo final (-want +got):\n%s", diff)
	}
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}

	l, err := sessions.New(sessions.Options{Store: st}).Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Session.Changes().Last(5)
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("Last(5) after a load (-want +got):\n%s", diff)
	}
	if len(got) == 2 && (got[0].Title != "call c5" || *got[0].Files[0].Before != "before c5" || got[0].Files[0].AfterSize != 1) {
		t.Errorf("the newest record after a load = %+v", got[0])
	}
}

// A call's record is stored under the bound of a call's entry: the texts
// that do not fit are left out of the log, and after a load those files
// say why they cannot be restored. The live session keeps them all.
func TestChangeJournalStoredBound(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 200<<10)
	var files []tools.FileChange
	for i := range 8 {
		files = append(files, tools.FileChange{Path: "/p/" + string(rune('a'+i)), Existed: true, Exists: true, Before: &big})
	}
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Content: "x"}, &sessions.ToolView{Title: "many", Changed: files}, false)
	live := s.Changes().Last(1)[0].Files
	for _, f := range live {
		if f.Before == nil {
			t.Fatalf("the live record lost %s's text", f.Path)
		}
	}
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	l, err := sessions.New(sessions.Options{Store: st}).Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	loaded := l.Session.Changes().Last(1)[0].Files
	kept := 0
	for _, f := range loaded {
		switch {
		case f.Before != nil:
			kept++
		case !strings.Contains(f.NotKept, "not stored with the session"):
			t.Errorf("%s: NotKept = %q, want why it was not stored", f.Path, f.NotKept)
		}
	}
	if kept == 0 || kept == len(files) || kept*len(big) > sessions.CallMax {
		t.Errorf("%d of %d texts of %d KiB stored, want some, under %d bytes", kept, len(files), len(big)>>10, sessions.CallMax)
	}
}
