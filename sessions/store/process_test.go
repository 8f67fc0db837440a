package store_test

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// A session held by another process is ErrLocked for open and delete, and
// free again once that process is SIGKILLed; what it had synced survives,
// what it had only buffered does not.
func TestLockAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Append(store.Title{Title: "shared"})
	sess.Close()

	c := startHelper(t, ctx, "hold", st.Dir(), "s1")

	_, err = st.Open("s1")
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "open in another dsh-acp process") {
		t.Fatalf("open while held elsewhere: %v", err)
	}
	if err := st.Delete("s1"); !errors.Is(err, store.ErrLocked) {
		t.Errorf("delete while held elsewhere: %v", err)
	}
	// List does not need the lock.
	if page, err := st.List(store.ListOptions{}); err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != "shared" {
		t.Errorf("list while held elsewhere: %+v, %v", page, err)
	}

	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()

	sess, err = st.Open("s1")
	if err != nil {
		t.Fatalf("open after the holder was killed: %v", err)
	}
	defer sess.Close()
	var prompts []string
	for _, e := range sess.Entries() {
		if p, _ := e.Decode(); p.Kind() == store.KindPrompt {
			prompts = append(prompts, p.(store.Prompt).Text)
		}
	}
	if len(prompts) != 1 || prompts[0] != "synced by the helper" {
		t.Errorf("prompts after the kill = %q", prompts)
	}
}

// Two processes and this one reserve task ids at once: none is handed out
// twice, none is skipped.
func TestTaskIDsAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	st, _ := newStore(t)
	const each = 40
	a := startHelper(t, ctx, "tasks", st.Dir(), strconv.Itoa(each))
	b := startHelper(t, ctx, "tasks", st.Dir(), strconv.Itoa(each))
	fmt.Fprintln(a.in, "go")
	fmt.Fprintln(b.in, "go")
	var ids []int64
	for range each {
		id, err := st.NextTaskIDs(1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, c := range []*child{a, b} {
		out, err := io.ReadAll(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
		for _, f := range strings.Fields(string(out)) {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("helper printed %q", f)
			}
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) != 3*each {
		t.Fatalf("%d ids, want %d", len(ids), 3*each)
	}
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("ids are not 1..%d once each: %v", 3*each, ids)
		}
	}
	if next, _ := st.NextTaskIDs(1); next != 3*each+1 {
		t.Errorf("next = %d", next)
	}
}
