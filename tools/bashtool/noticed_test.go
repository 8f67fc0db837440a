package bashtool_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

// A background task's changes are shown once: with the notice that reports
// its end once the notice was delivered, unless a bash_output call read the
// end first; a task that changed nothing has nothing to show.
func TestNoticedChanges(t *testing.T) {
	t.Parallel()
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)
	l := newLocalTracked(t, executor.Options{}, tr)
	dir := t.TempDir()
	a := tools.Caller{SessionID: "A", Cwd: dir}
	// start runs a background command and waits for its notice.
	start := func(command string) string {
		t.Helper()
		res := l.run(t, a, command, map[string]any{"run_in_background": true})
		if res.IsError {
			t.Fatalf("start %q: %s", command, res.Text)
		}
		id := rawOf(t, res).TaskID
		select {
		case n := <-l.notices:
			if n != "A: background bash task "+id+" finished [status: completed, exit code: 0]. Read its output with bash_output." {
				t.Fatalf("notice %q", n)
			}
		case <-time.After(pollDeadline):
			t.Fatalf("no notice for %s after %v", id, pollDeadline)
		}
		return id
	}

	noticed := start("echo one > one.txt")
	if got := l.set.NoticedChanges("A"); len(got) != 0 {
		t.Errorf("before the notice was delivered: %+v", got)
	}
	l.set.NoticesDelivered("A")
	got := l.set.NoticedChanges("A")
	if len(got) != 1 || got[0].TaskID != noticed || len(got[0].Changes) != 1 ||
		got[0].Changes[0].Path != filepath.Join(dir, "one.txt") || got[0].Changes[0].NewText != "one\n" ||
		rawOf(t, got[0].Result).ChangedFiles != 1 || len(got[0].Locations) != 1 {
		t.Fatalf("noticed: %+v", got)
	}
	if res := run(testutil.Context(t), l.output, call(a, taskArgs(noticed))); len(res.Changes) != 0 {
		t.Errorf("bash_output after the notice showed them: %+v", res.Changes)
	}

	read := start("echo two > two.txt")
	if res := run(testutil.Context(t), l.output, call(a, taskArgs(read))); len(res.Changes) != 1 {
		t.Errorf("bash_output first: changes %+v, want two.txt", res.Changes)
	}
	start("cat one.txt >/dev/null")
	l.set.NoticesDelivered("A")
	if got := l.set.NoticedChanges("A"); len(got) != 0 {
		t.Errorf("read by bash_output or unchanged, yet noticed: %+v", got)
	}
}

// endsFirst is a real executor whose Start returns only once the task's
// completion notice was told: the order a command that ends at once can
// take in a container, where its exit overtakes the answer to its start.
type endsFirst struct {
	*executor.Local
	told chan string
}

func (e endsFirst) StartContext(ctx context.Context, spec executor.Spec) (string, error) {
	id, err := e.Local.StartContext(ctx, spec)
	if err == nil {
		<-e.told
	}
	return id, err
}

// A background task that ended before its start returned still shows its
// changes with its notice.
func TestNoticedChangesOfATaskThatEndedFirst(t *testing.T) {
	t.Parallel()
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)
	ex, err := executor.NewLocal(executor.Options{SpillDir: t.TempDir(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	told := make(chan string, 4)
	tb := newToolbox(t, bashtool.Options{Executor: endsFirst{ex, told}, Changes: tr, Notify: func(_, text string) { told <- text }})
	dir := t.TempDir()
	a := tools.Caller{SessionID: "A", Cwd: dir}
	res := run(testutil.Context(t), tb.bash, invocation{caller: a, args: bashArgs(t, "echo one > one.txt", map[string]any{"run_in_background": true})})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	tb.set.NoticesDelivered("A")
	got := tb.set.NoticedChanges("A")
	if len(got) != 1 || len(got[0].Changes) != 1 || got[0].Changes[0].Path != filepath.Join(dir, "one.txt") || got[0].Changes[0].NewText != "one\n" {
		t.Fatalf("noticed: %+v; want one.txt created", got)
	}
}
