package executor

import (
	"errors"
	"os/exec"
	"syscall"
)

// StartCmd starts cmd, which must not have been started, as a Process: the
// executor's own child, waited for as Process.Wait asks (on Linux, on a
// pidfd, without holding an OS thread). It is how unconfined commands
// start, and how a Confiner whose sandbox is a wrapper program
// (sandbox-exec) can start its commands.
func StartCmd(cmd *exec.Cmd) (Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	pidfd := wantPidfd(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &cmdProcess{cmd: cmd, pidfd: pidfd}, nil
}

// cmdProcess is a Process that is an exec.Cmd of ours.
type cmdProcess struct {
	cmd   *exec.Cmd
	pidfd *int
}

func (c *cmdProcess) Pid() int { return c.cmd.Process.Pid }

func (c *cmdProcess) Wait() (syscall.WaitStatus, error) {
	waitExit(c.cmd, c.pidfd)
	if c.cmd.ProcessState == nil {
		return 0, errors.New("wait: no status")
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return 0, errors.New("wait: no wait status")
	}
	return ws, nil
}
