package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
)

// Command returns how to start `bash -c command` confined to p, with env
// as the command's environment (TMPDIR is replaced by p.TempDir).
func (l *Launcher) Command(command string, p Policy, env []string) (*Command, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	p.Workdir = filepath.Clean(p.Workdir)
	r, err := policyPipe(wirePolicy{Policy: p, Command: command, Namespaces: l.Namespaces(), NetNS: l.avail.NetNS})
	if err != nil {
		return nil, err
	}
	return &Command{
		Path:        l.exe,
		Args:        []string{helperArg0},
		Env:         commandEnv(env, p.TempDir, helperEnv+"="+stageOuter),
		Dir:         p.Workdir,
		ExtraFiles:  []*os.File{r},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}, nil
}
