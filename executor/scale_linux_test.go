//go:build linux && !portable

package executor_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// threads reads this process's OS thread count.
func threads(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads line")
	return 0
}

// Running commands hold no OS thread each: a task waits on its pidfd through
// the runtime's poller. Blocked in wait4, 1,000 tasks held 1,000 threads,
// and past 10,000 the runtime aborts the program. Not parallel: it counts
// the process's threads.
func TestTasksHoldNoThread(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 processes")
	}
	ctx := testutil.WithTimeout(t, 120*time.Second)
	l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: 2 * time.Second}})
	before := threads(t)
	const n = 1000
	for range n {
		if _, err := l.Start(executor.Spec{Command: "exec sleep 1000", Owner: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	// Every task's shell must be waiting, not merely forked.
	waitUntil(ctx, t, "all tasks running", func() bool { return countSleeps(l) >= n })
	after := threads(t)
	t.Logf("%d running tasks: %d OS threads before, %d after", n, before, after)
	if after-before > 50 {
		t.Errorf("%d running tasks took %d more OS threads; want them to wait without one each", n, after-before)
	}
	if got := l.KillOwned("s"); got != n {
		t.Errorf("KillOwned = %d, want %d", got, n)
	}
}

// countSleeps counts the executor's tasks still running.
func countSleeps(l *executor.Local) int {
	n := 0
	for i := 1; ; i++ {
		info, err := l.Info("bash-" + strconv.Itoa(i))
		if err != nil {
			return n
		}
		if info.Status.State == executor.Running {
			n++
		}
	}
}
