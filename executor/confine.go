package executor

import (
	"errors"
	"os/exec"
)

// ErrNoSandbox: a command asked to be confined (Spec.Sandboxed) and the
// executor has no Confiner. The command does not run: a confinement that
// was asked for is never skipped.
var ErrNoSandbox = errors.New("no sandbox to confine the command")

// Confiner starts commands confined to a sandbox (see Options.Confine). The
// executor still owns the process: it starts, signals, reaps and registers
// it exactly as an unconfined one.
type Confiner interface {
	// Command returns the process that runs `bash -c c.Spec.Command`
	// confined, without Stdout and Stderr (the executor sets them), and
	// done, to call once Start returned, whether it succeeded or not. The
	// process must be a session leader (Setsid) that dies by the signal
	// that ended the command.
	Command(c Confinement) (cmd *exec.Cmd, done func(), err error)
	// Release is called when owner is gone (KillOwned): what the Confiner
	// keeps for it (its temporary directory) can go.
	Release(owner string)
	// Close is called once by the executor's Close, after every process
	// group is gone.
	Close() error
}

// Confinement is one command to confine.
type Confinement struct {
	// Shell is bash's absolute path.
	Shell string
	// Spec is the resolved spec; Workdir is absolute.
	Spec Spec
	// Env is the scrubbed environment the command gets.
	Env []string
	// SpillDir is the directory of the spec's owner's spill files, which
	// its commands may read (the tool text names them).
	SpillDir string
	// PrivateDir is the executor's whole spill directory: the other
	// owners' spill files are in it, and must stay out of reach.
	PrivateDir string
}
