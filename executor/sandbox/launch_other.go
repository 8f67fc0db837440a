//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"os/exec"
)

// Command fails: this platform has no sandbox.
func (l *Launcher) Command(command string, p Policy, env []string) (*exec.Cmd, error) {
	return nil, errors.New("no sandbox on this platform")
}
