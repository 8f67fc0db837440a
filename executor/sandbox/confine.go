package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/agentdir"
)

// ConfinerOptions configure NewConfiner.
type ConfinerOptions struct {
	// Launcher builds each confined command. Required.
	Launcher *Launcher
	// TempParent is where the sessions' private temporary directories are
	// made, inside one directory of the agent's (mode 0700). Empty means
	// os.TempDir().
	TempParent string
	// Read narrows what commands may read (--sandbox-read); nil means the
	// whole filesystem but Deny.
	Read []string
	// Deny lists what is the agent's and no command may read: the session
	// store, the log file. Missing paths are ignored.
	Deny []string
	// Network lets commands use the network (--sandbox-network).
	Network bool
	// IPC lists where the host's local services keep their unix sockets
	// (see DefaultIPC; nil means it). With namespaces and without Network
	// they are covered like Deny: a pathname socket is a file, outside the
	// network namespace's reach, and Landlock controls connecting to one
	// only from ABI 9 (a session bus is systemd-run --user away from an
	// unconfined command; Docker's socket from root).
	IPC []string
}

// DefaultIPC is where the usual local services listen: the user's runtime
// directory (session bus, systemd, podman, ssh and gpg agents, Wayland),
// the system bus, Docker's and podman's sockets, X11's, tmux's and
// screen's.
func DefaultIPC() []string {
	run := os.Getenv("XDG_RUNTIME_DIR")
	if run == "" {
		run = fmt.Sprintf("/run/user/%d", os.Getuid())
	}
	uid := os.Getuid()
	tmux := fmt.Sprintf("/tmp/tmux-%d", uid)
	if d := os.Getenv("TMUX_TMPDIR"); d != "" {
		tmux = fmt.Sprintf("%s/tmux-%d", d, uid)
	}
	// tmux's and screen's servers run any command they are sent, unconfined.
	return []string{run, "/run/dbus", "/var/run/dbus", "/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd", "/tmp/.X11-unix", tmux, "/run/screen", "/var/run/screen"}
}

// Confiner is the executor's Confiner over a Launcher: each command's
// policy is its session's cwd and temporary directory to write, everything
// but the agent's files (and other sessions' spill files and temporary
// directories) to read, and no network unless allowed.
type Confiner struct {
	opts ConfinerOptions

	// mu guards the fields below.
	mu      sync.Mutex
	root    string                   // parent of the session dirs, made on first need
	dirs    map[string]*SessionDir   // owner → its temporary directory
	zygotes map[string]*ownerZygotes // owner → its zygotes (Linux)
	closed  bool
}

var _ executor.Confiner = (*Confiner)(nil)

// NewConfiner returns a Confiner; it creates nothing until the first command.
func NewConfiner(opts ConfinerOptions) (*Confiner, error) {
	if opts.Launcher == nil {
		return nil, errors.New("new confiner: no launcher")
	}
	return &Confiner{opts: opts, dirs: map[string]*SessionDir{}, zygotes: map[string]*ownerZygotes{}}, nil
}

// TempDir returns owner's temporary directory, creating it on first need.
func (c *Confiner) TempDir(owner string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", errors.New("confiner closed")
	}
	if d := c.dirs[owner]; d != nil {
		return d.Path, nil
	}
	if c.root == "" {
		parent := c.opts.TempParent
		if parent == "" {
			parent = os.TempDir()
		}
		// Named after the agent: see agentdir.
		root, err := os.MkdirTemp(parent, agentdir.Pattern("sandbox"))
		if err != nil {
			return "", fmt.Errorf("sandbox temp dir: %w", err)
		}
		c.root = root
	}
	d, err := NewSessionDir(c.root)
	if err != nil {
		return "", err
	}
	c.dirs[owner] = d
	return d.Path, nil
}

// Start is executor.Confiner's: the command, confined to its session's
// policy. Its errors say they are the sandbox's.
func (c *Confiner) Start(x executor.Confinement) (executor.Process, error) {
	p, err := c.confine(x)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return p, nil
}

func (c *Confiner) confine(x executor.Confinement) (executor.Process, error) {
	p, tmp, err := c.policy(x.Spec.Owner, x.Spec.Root, x.Spec.Roots, x.Spec.Workdir, x.Shell, x.SpillDir, x.PrivateDir)
	if err != nil {
		return nil, err
	}
	return c.start(x.Spec.Owner, p, x.Spec.Workdir, x.Spec.Command, commandEnv(x.Env, tmp), x.Stdout, x.Stderr)
}

// policy is what a command of owner may touch: root (else workdir, where
// it starts), the session's other roots and its temporary directory to
// write, everything but the agent's files and the other sessions' to read.
// It returns the temporary directory too.
func (c *Confiner) policy(owner, root string, roots []string, workdir, shell, spillDir, privateDir string) (Policy, string, error) {
	tmp, err := c.TempDir(owner)
	if err != nil {
		return Policy{}, "", err
	}
	c.mu.Lock()
	sandboxes := c.root
	c.mu.Unlock()
	if root == "" {
		root = workdir
	}
	p := Policy{
		Workdir: root,
		TempDir: tmp,
		// The other roots are granted as Workdir is: the denied paths
		// inside them stay denied.
		Write:   slices.Clone(roots),
		Network: c.opts.Network,
		Shell:   shell,
		// The other sessions' spill files and temporary directories are in
		// these two; the command's own are re-opened inside them (its
		// temporary directory as a write tree, its spill files by Read).
		Deny: append([]string{privateDir, sandboxes}, c.opts.Deny...),
	}
	if !c.opts.Network && c.opts.Launcher.Namespaces() {
		ipc := c.opts.IPC
		if ipc == nil {
			ipc = DefaultIPC()
		}
		p.Deny = append(p.Deny, ipc...)
	}
	read := c.opts.Read
	if len(read) == 0 {
		read = []string{"/"}
	}
	if spillDir != "" {
		p.Read = append(append([]string{}, read...), spillDir)
	} else {
		p.Read = read
	}
	return p, tmp, nil
}

// Files are owner's file operations under the policy its commands get
// (executor.FileConfiner): each path, its links resolved, is checked with
// Policy.Permits against that very policy, built by the same code
// (policy), before the operation is done on the resolved path.
func (c *Confiner) Files(a executor.FileAccess) (executor.Files, error) {
	p, _, err := c.policy(a.Owner, a.Root, a.Roots, a.Root, a.Shell, a.SpillDir, a.PrivateDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return executor.CheckedFiles{Allow: func(real string, write bool) error {
		if !p.Permits(real, write) {
			return ErrDenied
		}
		return nil
	}}, nil
}

// ErrDenied is the sandbox's refusal of a file operation.
var ErrDenied = errors.New("the sandbox does not allow it")

// Release removes owner's temporary directory (the session closed).
func (c *Confiner) Release(owner string) {
	c.mu.Lock()
	d := c.dirs[owner]
	delete(c.dirs, owner)
	zs := c.zygotes[owner]
	delete(c.zygotes, owner)
	c.mu.Unlock()
	if zs != nil {
		_ = zs.close()
	}
	if d != nil {
		_ = d.Remove()
	}
}

// Close removes every temporary directory left; no command starts after.
func (c *Confiner) Close() error {
	c.mu.Lock()
	c.closed = true
	dirs := c.dirs
	c.dirs = map[string]*SessionDir{}
	zs := c.zygotes
	c.zygotes = map[string]*ownerZygotes{}
	root := c.root
	c.mu.Unlock()
	var errs []error
	for _, z := range zs {
		errs = append(errs, z.close())
	}
	for _, d := range dirs {
		errs = append(errs, d.Remove())
	}
	if root != "" {
		errs = append(errs, os.RemoveAll(root))
	}
	return errors.Join(errs...)
}
