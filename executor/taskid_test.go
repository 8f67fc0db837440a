package executor_test

import (
	"errors"
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
