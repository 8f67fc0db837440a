package watchdog_test

import (
	"os/exec"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/watchdog"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// A Lazy starts its watchdog at the first registration and ends it at
// Close; one that cannot start leaves the program working; one never
// needed never starts.
func TestLazy(t *testing.T) {
	t.Parallel()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand in for the watchdog")
	}
	// cat reads the pipe to its EOF, as the watchdog does.
	l := watchdog.NewLazy(watchdog.Options{Path: cat, Args: []string{"cat"}})
	l.Started(1)
	l.Ended(1)
	if err := l.Close(testutil.Timeout); err != nil {
		t.Errorf("close a started watchdog: %v", err)
	}
	l.Started(2) // after Close: nothing, no new watchdog

	broken := watchdog.NewLazy(watchdog.Options{Path: "/nonexistent/dsh-acp", Args: []string{"dsh-acp"}})
	broken.Started(1)
	if err := broken.Close(testutil.Timeout); err != nil {
		t.Errorf("close a watchdog that could not start: %v", err)
	}

	never := watchdog.NewLazy(watchdog.Options{Path: "/nonexistent/dsh-acp", Args: []string{"dsh-acp"}})
	if err := never.Close(testutil.Timeout); err != nil {
		t.Errorf("close a watchdog never started: %v", err)
	}
}
