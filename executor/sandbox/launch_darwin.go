package sandbox

import (
	"os/exec"
	"path/filepath"
	"syscall"
)

// Command returns the exec.Cmd that runs `bash -c command` confined to p,
// with env as the command's environment (TMPDIR is replaced by p.TempDir):
// under sandbox-exec with a profile generated from p. The profile is the
// agent's, in sandbox-exec's arguments; the model's text only follows `-c`.
// The caller sets Stdout and Stderr. Its wait status is the command's:
// sandbox-exec execs bash.
func (l *Launcher) Command(command string, p Policy, env []string) (*exec.Cmd, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	p = realPaths(p)
	return &exec.Cmd{
		Path:        seatbeltPath,
		Args:        []string{"sandbox-exec", "-p", Profile(p), p.Shell, "-c", command},
		Env:         commandEnv(env, p.TempDir),
		Dir:         p.Workdir,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}, nil
}

// realPaths resolves the symlinks in p's paths (/tmp is /private/tmp):
// Seatbelt matches the real path of what is opened.
func realPaths(p Policy) Policy {
	one := func(s string) string {
		if s == "" {
			return s
		}
		if r, err := filepath.EvalSymlinks(s); err == nil {
			return r
		}
		return filepath.Clean(s)
	}
	all := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = one(s)
		}
		return out
	}
	p.Workdir, p.TempDir = one(p.Workdir), one(p.TempDir)
	p.Write, p.Read, p.Deny = all(p.Write), all(p.Read), all(p.Deny)
	return p
}
