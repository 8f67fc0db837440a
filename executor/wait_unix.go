//go:build !linux || portable

package executor

import (
	"os/exec"
	"syscall"
)

func wantPidfd(*syscall.SysProcAttr) *int { fd := -1; return &fd }

// waitExit blocks a thread in wait until the shell exits. On macOS that is
// bounded by the per-user process limit (kern.maxprocperuid, a few
// thousand), far below the runtime's 10,000-thread limit.
func waitExit(cmd *exec.Cmd, _ *int) { _ = cmd.Wait() }
