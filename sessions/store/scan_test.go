package store_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// OpenState folds the same State as Open without holding the entries, and
// Scan streams the same entries ReadEntries returns, those appended since
// the open (buffered, not yet synced) included, stopping when told.
func TestOpenStateAndScan(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(allKinds(), store.Title{Title: "t"}, store.TaskStarted{ID: "bash-9"}) {
		if _, err := sess.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()

	full, err := st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	want := full.State()
	wantEntries := full.Entries()
	full.Close()

	lean, err := st.OpenState("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer lean.Close()
	if diff := cmp.Diff(want, lean.State()); diff != "" {
		t.Errorf("OpenState's state (-Open's +OpenState's):\n%s", diff)
	}
	if e := lean.Entries(); e != nil {
		t.Errorf("OpenState holds %d entries, want none", len(e))
	}
	// A caller changing the State it was given changes no later one.
	got := lean.State()
	got.AlwaysAllow[0] = "changed"
	if diff := cmp.Diff(want, lean.State()); diff != "" {
		t.Errorf("state after a caller changed its copy (-want +got):\n%s", diff)
	}

	if _, err := lean.Append(store.Prompt{Text: "appended, not synced"}); err != nil {
		t.Fatal(err)
	}
	var scanned []store.Entry
	if err := lean.Scan(func(e store.Entry) bool {
		scanned = append(scanned, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	read, err := lean.ReadEntries()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(read, scanned); diff != "" {
		t.Errorf("Scan (-ReadEntries +Scan):\n%s", diff)
	}
	if n := len(wantEntries) + 1; len(scanned) != n || scanned[n-1].Kind != store.KindPrompt {
		t.Fatalf("Scan gave %d entries, want the %d stored and the one appended", len(scanned), n-1)
	}
	if diff := cmp.Diff(wantEntries, scanned[:len(wantEntries)]); diff != "" {
		t.Errorf("Scan (-Open's entries +Scan):\n%s", diff)
	}

	n := 0
	if err := lean.Scan(func(store.Entry) bool { n++; return n < 3 }); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("Scan went on to %d entries after fn returned false at the third", n)
	}
	lean.Close()
	if err := lean.Scan(func(store.Entry) bool { return true }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Scan of a closed session: %v, want ErrClosed", err)
	}
}
