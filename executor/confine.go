package executor

import (
	"errors"
	"os"
	"syscall"
)

// ErrNoSandbox: a command asked to be confined (Spec.Sandboxed) and the
// executor has no Confiner. The command does not run: a confinement that
// was asked for is never skipped.
var ErrNoSandbox = errors.New("no sandbox to confine the command")

// Confiner starts commands confined to a sandbox (see Options.Confine). The
// executor still owns the command: it signals its process group, registers
// it with the watchdog, collects its output and ends it exactly as an
// unconfined one; only the start, and who reaps the shell, are the
// Confiner's.
type Confiner interface {
	// Start starts `bash -c c.Spec.Command` confined, writing to c.Stdout
	// and c.Stderr (the caller closes its copies after Start returns). The
	// shell must lead its own session (pgid == sid == its pid as the
	// executor sees it) and die by the signal that ended it.
	Start(c Confinement) (Process, error)
	// Release is called when owner is gone (KillOwned): what the Confiner
	// keeps for it (its temporary directory, its helper) can go.
	Release(owner string)
	// Close is called once by the executor's Close, after every process
	// group is gone.
	Close() error
}

// Process is a started shell. It need not be the executor's child: a
// Confiner may have a helper of its own fork it.
type Process interface {
	// Pid is the shell's pid in the executor's PID namespace, which is
	// also its process group and session id.
	Pid() int
	// Wait blocks until the shell has ended and returns its wait status.
	// It is called once, and should not hold an OS thread while it waits
	// (thousands of commands may be waited for at once).
	Wait() (syscall.WaitStatus, error)
}

// RemoteProcess is a Process whose process group the executor can neither
// signal nor see in its process table (it runs in a container, behind a
// helper of the Confiner's): the executor asks the Process instead, and
// tells the Watcher nothing of it (its pid is not one of the host's).
type RemoteProcess interface {
	Process
	// Signal sends sig to the shell's process group and, with session set,
	// to every process of its session (what left the group is still the
	// command's). A group already gone is not an error.
	Signal(sig syscall.Signal, session bool) error
	// Alive reports whether a process of the group (with session set: of
	// the session) is left. Once the Confiner's helper is gone, nothing is.
	Alive(session bool) bool
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
	// Stdout and Stderr are the write ends of the command's capture pipes.
	// Its stdin is /dev/null.
	Stdout, Stderr *os.File
	// Stop is closed when the command is ended while Start has not
	// returned yet (its run cancelled, its owner's tasks killed, the
	// executor closing): a Confiner still waiting for something slow (an
	// engine making a container) gives up and returns an error, rather
	// than hold the turn, or the agent's exit, until it answers.
	Stop <-chan struct{}
}
