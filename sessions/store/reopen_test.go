package store_test

import (
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// TestReopen: a session reopened in another directory records the move,
// and the tasks left running end "gone", once; State stays as stored.
func TestReopen(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Create("s1", "/a")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Payload{store.TaskStarted{ID: "bash-1"}, store.TaskStarted{ID: "bash-2"}, store.TaskEnded{ID: "bash-1", State: "exited"}} {
		if _, err := sess.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	sess, err = st.Reopen("s1", "/b")
	if err != nil {
		t.Fatal(err)
	}
	if got := sess.State(); got.Cwd != "/a" || len(got.RunningTasks) != 1 || got.RunningTasks[0] != "bash-2" {
		t.Errorf("state after Reopen: cwd %q, running %v; want the stored one (/a, [bash-2])", got.Cwd, got.RunningTasks)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	sess, err = st.Reopen("s1", "/b")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if got := sess.State(); got.Cwd != "/b" || len(got.RunningTasks) != 0 {
		t.Errorf("state after a second Reopen: cwd %q, running %v; want /b and none", got.Cwd, got.RunningTasks)
	}
	entries, err := sess.ReadEntries()
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, e := range entries[3:] {
		added = append(added, string(e.Data))
	}
	want := []string{`{"cwd":"/b"}`, `{"id":"bash-2","state":"gone"}`}
	if !slices.Equal(added, want) {
		t.Errorf("entries Reopen added = %q, want %q (the second Reopen adds none)", added, want)
	}
}
