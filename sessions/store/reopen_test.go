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
	sess, err = st.Reopen("s1", "/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sess.State(); got.Cwd != "/a" || len(got.RunningTasks) != 1 || got.RunningTasks[0] != "bash-2" {
		t.Errorf("state after Reopen: cwd %q, running %v; want the stored one (/a, [bash-2])", got.Cwd, got.RunningTasks)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	sess, err = st.Reopen("s1", "/b", nil)
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

// TestReopenRoots: the extra roots a reopen gives are recorded when they
// differ from those stored (an empty list too: the request's list is the
// whole of them), are the State's, and List shows them.
func TestReopenRoots(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Create("s1", "/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(store.Roots{Roots: []string{"/r1"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		give      []string
		wantAdded int
	}{
		{[]string{"/r1"}, 0},
		{[]string{"/r2", "/r3"}, 1},
		{nil, 1},
		{nil, 0},
	}
	count := 1 // the Roots entry above
	for i, step := range steps {
		sess, err = st.Reopen("s1", "/a", step.give)
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Close(); err != nil {
			t.Fatal(err)
		}
		sess, err = st.OpenState("s1")
		if err != nil {
			t.Fatal(err)
		}
		got := sess.State().Roots
		all, err := sess.ReadEntries()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Close(); err != nil {
			t.Fatal(err)
		}
		if added := len(all) - count; added != step.wantAdded {
			t.Errorf("step %d: Reopen with %q added %d entries, want %d", i, step.give, added, step.wantAdded)
		}
		count = len(all)
		if !slices.Equal(got, step.give) {
			t.Errorf("step %d: roots after Reopen with %q = %q", i, step.give, got)
		}
		page, err := st.List(store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) != 1 || !slices.Equal(page.Sessions[0].Roots, step.give) {
			t.Errorf("step %d: List shows %+v, want the roots %q", i, page.Sessions, step.give)
		}
	}
}
