package secretenv

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Protect marks the agent non-dumpable, so a command running as the
// same user cannot read the API key from /proc/<agent>/mem (or attach a
// debugger). Children are unaffected: execve makes them dumpable again. Root
// is not stopped by it (see README).
func Protect() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("protect process memory: %w", err)
	}
	return nil
}
