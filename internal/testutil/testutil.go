// Package testutil holds what the tests of several packages share: a
// bounded context, the TestMain that checks for leaked goroutines (and
// serves as a helper child when the test binary re-executes itself), and
// waits for what sends no event — a process's end, a line a command wrote
// to a file. Only _test.go files import it.
//
// The waits poll, every PollInterval, until their condition holds or the
// context ends: the kernel tells a process's parent of its end, not a
// test watching a grandchild, and a file appearing has no event a test can
// select on. Anything that does send an event (a channel, a reply, a log
// line read by the program under test) is waited on directly instead.
package testutil

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Timeout bounds a test that takes its context from Context: long enough
// for a loaded 2-core machine running tests in parallel, short enough that
// a hang fails with a message rather than the go test timeout.
const Timeout = 30 * time.Second

// PollInterval is how often the waits re-check their condition.
const PollInterval = 5 * time.Millisecond

// Context is a context that ends after Timeout or when t's cleanups run,
// whichever is first. It is not derived from t.Context, so cleanups
// registered after the call can still use it.
func Context(t testing.TB) context.Context {
	t.Helper()
	return WithTimeout(t, Timeout)
}

// WithTimeout is Context with a bound of d instead of Timeout.
func WithTimeout(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ChildEnv names the environment variable that makes a re-executed test
// binary a helper child instead of running the tests (see Main and Child);
// its value is the child's mode.
const ChildEnv = "DSH_TEST_CHILD"

// Main is a package's TestMain: it runs the tests and fails the binary
// when a goroutine outlives them. When the binary was started by Child (or
// with ChildEnv set otherwise) it instead calls child with the mode and
// exits with the code it returns; child may be nil in a package that
// starts no children.
func Main(m *testing.M, child func(mode string) int) {
	if mode := os.Getenv(ChildEnv); mode != "" && child != nil {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m)
}

// Child is a command re-executing the test binary as a helper child in
// mode, with args after a -test.run that matches no test (so a binary
// whose TestMain ignores ChildEnv runs nothing). Its environment is the
// test's plus ChildEnv; the caller may add to cmd.Env and set its stdio.
// The child's own arguments are os.Args[2:].
func Child(t testing.TB, ctx context.Context, mode string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("test binary: %v", err)
	}
	cmd := exec.CommandContext(ctx, self, append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+mode)
	return cmd
}

// WaitGone waits until pid runs no more (see Gone), and fails t if ctx
// ends first.
func WaitGone(t testing.TB, ctx context.Context, pid int) {
	t.Helper()
	if !poll(ctx, func() bool { return Gone(pid) }) {
		t.Fatalf("process %d still runs: %v", pid, context.Cause(ctx))
	}
}

// WaitFile waits until the file at path is non-empty and ends in a
// newline — a command wrote a whole line to it, such as its pid — and
// returns its content without surrounding space. It fails t if ctx ends
// first.
func WaitFile(t testing.TB, ctx context.Context, path string) string {
	t.Helper()
	var s string
	ok := poll(ctx, func() bool {
		b, err := os.ReadFile(path)
		s = string(b)
		return err == nil && strings.HasSuffix(s, "\n")
	})
	if !ok {
		t.Fatalf("no line written to %s: %v", path, context.Cause(ctx))
	}
	return strings.TrimSpace(s)
}

// poll reports whether cond held before ctx ended.
func poll(ctx context.Context, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
			if cond() {
				return true
			}
		}
	}
}
