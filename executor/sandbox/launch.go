package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// helperEnv marks a process as the sandbox helper and names its stage. The
// helper removes it before bash starts.
const helperEnv = "DSH_SANDBOX_HELPER"

// Helper stages (values of helperEnv).
const (
	stageOuter = "outer" // started by the agent; waits and reproduces the status
	stageInit  = "init"  // pid 1 of the command's PID namespace
	stageProbe = "probe" // Probe's check that /proc can be mounted
)

// helperArg0 is argv[0] of the helper, so that ps shows what it is.
const helperArg0 = "dsh-acp-sandbox"

// maxPolicy bounds the encoded policy: it is written into a pipe before the
// helper starts, so it must fit the pipe's buffer.
const maxPolicy = 60 << 10

// wirePolicy is what goes over the policy pipe.
type wirePolicy struct {
	Policy
	// Command is the text of `bash -c`.
	Command string
	// Namespaces asks the helper for user, PID and mount namespaces (and a
	// network namespace unless Policy.Network).
	Namespaces bool
	// NetNS: a network namespace is available.
	NetNS bool
}

// LauncherOptions configure NewLauncher.
type LauncherOptions struct {
	// Executable is the binary re-executed as the helper; its main must
	// call HelperMain first. Empty means os.Executable().
	Executable string
	// Availability is what Probe found. NewLauncher refuses one that
	// confines nothing (see Require).
	Availability Availability
	// NoNamespaces confines with Landlock only even where namespaces are
	// available (tests, benchmarks, kernels where they misbehave).
	NoNamespaces bool
}

// Launcher builds the confined form of commands. It is safe for concurrent
// use and holds no resources.
type Launcher struct {
	exe   string
	avail Availability
	nons  bool
}

// NewLauncher checks that commands can be confined here.
func NewLauncher(opts LauncherOptions) (*Launcher, error) {
	if err := Require(opts.Availability); err != nil {
		return nil, err
	}
	exe := opts.Executable
	if exe == "" {
		var err error
		exe, err = os.Executable()
		if err != nil {
			return nil, fmt.Errorf("new launcher: %w", err)
		}
	}
	return &Launcher{exe: exe, avail: opts.Availability, nons: opts.NoNamespaces}, nil
}

// Namespaces reports whether commands get their own PID namespace (nothing
// they start outlives them).
func (l *Launcher) Namespaces() bool {
	return !l.nons && l.avail.UserNS && l.avail.PIDNS
}

// Command is how to start one confined command: copy it into an exec.Cmd
// (or use Cmd), set Stdout and Stderr, Start, then call Close. The process
// started is the one to signal (as a group: SysProcAttr makes it a session
// leader) and to wait for; its wait status is the command's: an exit code
// passes through, a death by signal is reproduced as a death by the same
// signal.
type Command struct {
	Path string
	Args []string
	// Env is the environment given to Command with TMPDIR set to the
	// policy's TempDir and the helper's marker added.
	Env []string
	// Dir is the policy's Workdir.
	Dir string
	// ExtraFiles carry the policy (fd 3 in the helper). The helper closes
	// it before bash starts.
	ExtraFiles []*os.File
	// SysProcAttr starts the helper in its own session and process group.
	// It has no namespace flags: the helper creates the namespaces for a
	// child of its own, because the process the executor waits on must not
	// be pid 1 of a namespace (pid 1 cannot die by SIGTERM, so it could
	// not reproduce the command's death by signal).
	SysProcAttr *syscall.SysProcAttr
}

// Cmd returns an exec.Cmd for c; the caller sets Stdout and Stderr.
func (c *Command) Cmd() *exec.Cmd {
	return &exec.Cmd{
		Path:        c.Path,
		Args:        c.Args,
		Env:         c.Env,
		Dir:         c.Dir,
		ExtraFiles:  c.ExtraFiles,
		SysProcAttr: c.SysProcAttr,
	}
}

// Close releases the agent's copies of ExtraFiles. Call it once Start has
// returned (whether it succeeded or not), or instead of starting.
func (c *Command) Close() error {
	var errs []error
	for _, f := range c.ExtraFiles {
		errs = append(errs, f.Close())
	}
	c.ExtraFiles = nil
	return errors.Join(errs...)
}

// commandEnv returns env without TMPDIR and the helper marker, then with
// TMPDIR=tmp (unless empty) and the extra entries.
func commandEnv(env []string, tmp string, extra ...string) []string {
	out := make([]string, 0, len(env)+1+len(extra))
	for _, kv := range env {
		if strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, helperEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	if tmp != "" {
		out = append(out, "TMPDIR="+tmp)
	}
	return append(out, extra...)
}

// policyPipe returns the read end of a pipe that holds w and is closed for
// writing.
func policyPipe(w wirePolicy) (*os.File, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode policy: %w", err)
	}
	if len(b) > maxPolicy {
		return nil, fmt.Errorf("policy too large: %d bytes", len(b))
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("policy pipe: %w", err)
	}
	_, err = wr.Write(b)
	if cerr := wr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("write policy: %w", err)
	}
	return r, nil
}

// readPolicy reads and closes the policy pipe at fd.
func readPolicy(fd uintptr) (wirePolicy, error) {
	var w wirePolicy
	f := os.NewFile(fd, "policy")
	if f == nil {
		return w, errors.New("no policy descriptor")
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("read policy: %w", err)
	}
	return w, w.check()
}
