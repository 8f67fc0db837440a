package executor_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// taskDaemonScript starts a sleep in a session of its own, prints its pid,
// and runs on.
const taskDaemonScript = `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 1000`

// A background task's setsid child (it left the task's group and session)
// ends with the task — by bash_kill (Kill) and by its session's close
// (KillOwned) — found by the task's own marker, while another owner's
// task's child runs on until Close.
func TestTaskSetsidChildEndsWithIt(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	start := func(owner string) (string, int) {
		t.Helper()
		id, err := l.Start(executor.Spec{Command: taskDaemonScript, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		out := readUntil(ctx, t, l, id, "\n")
		daemon, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("daemon pid %q", out)
		}
		return id, daemon
	}
	killed, killedDaemon := start("a")
	closed, closedDaemon := start("b")
	_, otherDaemon := start("c")

	if _, err := l.Kill(killed); err != nil {
		t.Fatal(err)
	}
	e.wait(ctx, killed)
	waitUntil(ctx, t, "the killed task's setsid child to end", func() bool { return testutil.Gone(killedDaemon) })

	if n := l.KillOwned("b"); n != 1 {
		t.Errorf("KillOwned(b) = %d, want 1", n)
	}
	e.wait(ctx, closed)
	waitUntil(ctx, t, "the closed session's task's setsid child to end", func() bool { return testutil.Gone(closedDaemon) })

	if testutil.Gone(otherDaemon) {
		t.Fatal("another owner's task's setsid child ended too")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Gone(otherDaemon) {
		t.Errorf("the task's setsid child %d survives Close", otherDaemon)
	}
}

// finishedDaemonScript is `server --daemonize`'s shape: a daemon in a
// session of its own, and the task's shell done as soon as the daemon is
// in it (a daemon that had not yet called setsid when its task ended was
// still in the task's group, and ended with it: the test then failed).
const finishedDaemonScript = `f=$(mktemp) && ( setsid sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$f" </dev/null >/dev/null 2>&1 & ) && until [ -s "$f" ]; do sleep 0.01; done && cat "$f" && rm -f "$f"`

// A finished background task's daemon ends with bash_kill (Kill answers
// "already finished" and ends it all the same) and with its session's
// close (KillOwned), found by the task's marker; another owner's runs on
// until Close. Without it, such a daemon outlived both until the agent's
// end.
func TestFinishedTaskDaemonEndsWithKillAndClose(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	start := func(owner string) (string, int) {
		t.Helper()
		id, err := l.Start(executor.Spec{Command: finishedDaemonScript, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		out := readUntil(ctx, t, l, id, "\n")
		daemon, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("daemon pid %q", out)
		}
		e.wait(ctx, id)
		if testutil.Gone(daemon) {
			t.Fatalf("the daemon %d ended with its task's shell", daemon)
		}
		return id, daemon
	}
	killed, killedDaemon := start("a")
	_, closedDaemon := start("b")
	_, otherDaemon := start("c")

	if res, err := l.Kill(killed); err != nil || !res.AlreadyFinished {
		t.Fatalf("Kill of a finished task = %+v, %v; want already finished", res, err)
	}
	waitUntil(ctx, t, "the finished task's daemon to end by Kill", func() bool { return testutil.Gone(killedDaemon) })

	if n := l.KillOwned("b"); n != 0 {
		t.Errorf("KillOwned(b) = %d tasks signalled, want 0 (its task had finished)", n)
	}
	waitUntil(ctx, t, "the finished task's daemon to end by KillOwned", func() bool { return testutil.Gone(closedDaemon) })

	if testutil.Gone(otherDaemon) {
		t.Fatal("another owner's finished task's daemon ended too")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Gone(otherDaemon) {
		t.Errorf("a finished task's daemon %d survives Close", otherDaemon)
	}
}
