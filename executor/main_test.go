package executor_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// The test binary re-executed as a helper child (testutil.Child) measures
// something in a clean process: its RSS, its /proc/<pid>/environ.
func TestMain(m *testing.M) {
	testutil.Main(m, func(mode string) int {
		switch mode {
		case "rss":
			return rssChild()
		case "apikey":
			return apiKeyChild()
		}
		return 2
	})
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
