package sandbox_test

import (
	"errors"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// A Lazy sets up once, at the first need, and not at all when nothing
// needed it; without a sandbox a command fails with ErrNoSandbox.
func TestLazy(t *testing.T) {
	t.Parallel()
	calls := 0
	l := sandbox.NewLazy(func() (*sandbox.Confiner, bool) {
		calls++
		return nil, false
	})
	if calls != 0 {
		t.Fatalf("set up before the first need: %d", calls)
	}
	if l.Offered() {
		t.Error("offered without a sandbox")
	}
	if _, err := l.Start(executor.Confinement{}); !errors.Is(err, executor.ErrNoSandbox) {
		t.Errorf("start without a sandbox: %v", err)
	}
	l.Release("s")
	if err := l.Close(); err != nil {
		t.Error(err)
	}
	if calls != 1 {
		t.Errorf("set up %d times", calls)
	}

	never := sandbox.NewLazy(func() (*sandbox.Confiner, bool) {
		t.Error("a sandbox nothing needed was set up at Close")
		return nil, false
	})
	if err := never.Close(); err != nil {
		t.Error(err)
	}
	if !sandbox.Prepared(nil, true).Offered() {
		t.Error("Prepared: not offered")
	}
}
