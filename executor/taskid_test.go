package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// NextTaskID numbers tasks (a store continuing its sequence after a
// restart) and is told each task's owner; its failure fails the Start.
func TestNextTaskID(t *testing.T) {
	t.Parallel()
	next := int64(41)
	var owners []string
	fail := false
	l := newLocal(t, executor.Options{NextTaskID: func(owner string) (int64, error) {
		if fail {
			return 0, errors.New("counter damaged")
		}
		owners = append(owners, owner)
		next++
		return next, nil
	}})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	id, err := l.Start(executor.Spec{Command: "true", Owner: "s1"})
	if err != nil || id != "bash-42" {
		t.Fatalf("Start = %q, %v; want bash-42", id, err)
	}
	e.wait(ctx, id)
	fail = true
	if id, err := l.Start(executor.Spec{Command: "true", Owner: "s1"}); err == nil {
		t.Fatalf("Start with a failing counter = %q, want an error", id)
	}
	if len(owners) != 1 || owners[0] != "s1" {
		t.Errorf("owners %q, want [s1]", owners)
	}
}

// TaskStarted is told each task's id and owner before its command runs,
// and not of a Start that failed.
func TestTaskStarted(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	type started struct {
		id, owner string
		ran       bool
	}
	var got []started
	l := newLocal(t, executor.Options{TaskStarted: func(id, owner string) {
		_, err := os.Stat(marker)
		got = append(got, started{id, owner, err == nil})
	}})
	e := subscribe(t, l)
	id, err := l.Start(executor.Spec{Command: "touch " + marker, Owner: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(testutil.Context(t), id)
	if len(got) != 1 || got[0] != (started{id, "s1", false}) {
		t.Errorf("TaskStarted told %+v, want [{%s s1 false}] (before the command ran)", got, id)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(executor.Spec{Command: "true", Owner: "s1"}); err == nil {
		t.Fatal("Start on a closed executor succeeded")
	}
	if len(got) != 1 {
		t.Errorf("TaskStarted told of a Start that failed: %+v", got)
	}
}
