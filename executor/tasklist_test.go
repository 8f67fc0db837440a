package executor_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestList(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{DefaultWorkdir: t.TempDir()})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	var ids []string
	for _, spec := range []executor.Spec{
		{Command: "true", Owner: "s1"},
		{Command: "exit 2", Owner: "s2"},
		{Command: "echo three", Owner: "s1"},
	} {
		id, err := l.Start(spec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		e.wait(ctx, id)
	}
	got := l.List("s1")
	if len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[2] {
		t.Fatalf("List(s1) = %+v, want %s and %s, oldest first", got, ids[0], ids[2])
	}
	if got[1].Command != "echo three" || got[1].Status.State != executor.Completed || got[1].Started.Before(got[0].Started) {
		t.Errorf("List(s1)[1] = %+v", got[1])
	}
	if got := l.List("s3"); len(got) != 0 {
		t.Errorf("List of an owner with no tasks = %+v", got)
	}
}
