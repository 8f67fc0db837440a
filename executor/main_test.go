package executor_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

// childEnv selects a helper child: the test binary re-executed to measure
// something in a clean process (its RSS, its /proc/<pid>/environ).
const childEnv = "DSH_EXECUTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
	case "rss":
		os.Exit(rssChild())
	case "apikey":
		os.Exit(apiKeyChild())
	default:
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}

// testCtx bounds every test.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newLocal builds an executor with fast test settings, closed at cleanup.
func newLocal(t *testing.T, opts executor.Options) *executor.Local {
	t.Helper()
	if opts.KillGrace == 0 {
		opts.KillGrace = 500 * time.Millisecond
	}
	if opts.DefaultWorkdir == "" {
		opts.DefaultWorkdir = t.TempDir()
	}
	if opts.SpillDir == "" {
		opts.SpillDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	l, err := executor.NewLocal(opts)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// processGone reports that pid no longer runs: kill(pid, 0) says ESRCH, or
// it is a zombie nobody reaps (in this sandbox PID 1 does not reap orphans,
// so an orphan's corpse stays; it holds no resources and runs nothing).
func processGone(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	return len(f) > 0 && (string(f[0]) == "Z" || string(f[0]) == "X")
}

// liveGroupMembers lists processes of group pgid that are not zombies.
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if pg, _ := strconv.Atoi(string(f[2])); pg == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// pids parses whitespace-separated pids a command printed.
func pids(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	return out
}
