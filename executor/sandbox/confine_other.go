//go:build !linux

package sandbox

import (
	"os"

	"github.com/dsh-acp/dsh-acp/executor"
)

// ownerZygotes are one session's zygotes: none here (no zygote outside
// Linux).
type ownerZygotes struct{}

func (*ownerZygotes) close() error { return nil }

// start runs the command under the platform's wrapper (sandbox-exec).
func (c *Confiner) start(_ string, p Policy, dir, command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	cmd, err := c.opts.Launcher.Command(command, p, env)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		cmd.Dir = dir
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return executor.StartCmd(cmd)
}
