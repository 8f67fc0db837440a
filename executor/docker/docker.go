// Package docker runs commands in containers of a Docker Engine, behind the
// executor's seam: each session gets a container, created at its first
// command and gone when the session closes or the agent ends, and a helper
// inside it (the agent's own static binary, in HelperMode) that starts,
// streams, signals and reaps its commands. The executor keeps everything
// else — output capture, spills, timeouts, ids, owners and markers — so the
// model sees the same bytes as from a local command.
//
// The helper is the container's main process, attached with StdinOnce: its
// stdin is the tether. When the agent's connection to the engine closes (the
// session closed, or the agent died however it died) the engine closes that
// stdin, the helper ends every command, the container ends and the engine
// removes it (AutoRemove). A plain `docker exec` could do none of this: it
// has no kill, reads SIGTERM and `exit 143` alike, and outlives the agent.
package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// HelperMode is the first argument that makes the agent's binary the
// helper inside a container (see HelperMain).
const HelperMode = "__dsh-docker-helper"

// Labels on every container of ours. The sweep at start finds containers
// of agents that are gone by them, and never touches one without them.
const (
	labelAgent   = "dev.dsh-acp.agent"   // hostname/pid of the agent that made it
	labelSession = "dev.dsh-acp.session" // the session it serves
)

// helperDir is where the helper binary goes in every container.
const helperDir = "/.dsh-acp"

// Options configure NewConfiner.
type Options struct {
	// Image is the image of every session's container; it needs bash and
	// nothing else. Required.
	Image string
	// Network is the containers' network: empty means the engine's default
	// network, "none" none, anything else a network of the engine's.
	Network string
	// Read are host paths mounted read-only at their own paths in every
	// container (--docker-read): what commands may read beyond the
	// session's directory. They must exist on the engine's host.
	Read []string
	// Helper is the helper binary put into each container: a static Linux
	// build of dsh-acp for the engine's architecture. Required (see
	// LocateHelper).
	Helper string
	// Host is the engine's address (unix://, tcp://, ssh://). Empty means
	// DOCKER_HOST and the other Docker variables of the environment, else
	// the docker CLI's current context (DOCKER_CONTEXT, or `docker context
	// use`), else the engine's default socket.
	Host string
	// SSH is the ssh program for an ssh:// engine; empty means "ssh" in
	// PATH. Each connection is one ssh process, a child of the agent's
	// (executor.StartChild) told to Watcher and marked with RunMarker.
	SSH string
	// Watcher, if set, is told of each ssh process (the executor's
	// Options.Watcher: the watchdog ends them if the agent is killed).
	Watcher executor.Watcher
	// RunMarker is the executor's Options.RunMarker.
	RunMarker string
	// KillGrace is how long commands get between SIGTERM and SIGKILL when
	// a session's container ends. Zero means 2s.
	KillGrace time.Duration
	// Getenv reads the Docker variables (DOCKER_HOST, DOCKER_CONTEXT,
	// DOCKER_CONFIG) and HOME. Nil means os.Getenv.
	Getenv func(string) string
	// Labels are added to every container (tests label theirs).
	Labels map[string]string
	// Logger receives diagnostics. Nil means zap.NewNop().
	Logger *zap.Logger
}

// Confiner is the executor's Confiner over a Docker Engine.
type Confiner struct {
	opts   Options
	cli    *engine
	host   string // the engine's address, as the user gave it
	remote bool   // the engine is on another host: no spill mount
	agent  string
	logger *zap.Logger

	// wg counts the goroutines Close waits for: tethers and removals.
	wg sync.WaitGroup

	// mu guards the fields below.
	mu     sync.Mutex
	boxes  map[boxKey]*box // a session's container for its directory
	closed bool

	imagePath sync.Once
	path      string // the image's PATH, or the usual one
}

var _ executor.Confiner = (*Confiner)(nil)

// boxKey names a container: a session's for one directory of it and its
// other roots (joined by NULs). A session that comes back with another cwd
// or other roots (session/load) gets another container, as those
// directories are what the container mounts.
type boxKey struct{ owner, root, roots string }

// NewConfiner connects to the engine lazily: nothing is asked of it until
// the first command (or Sweep), so an engine that is down makes commands
// fail with a clear error, never the agent's start.
func NewConfiner(opts Options) (*Confiner, error) {
	if opts.Image == "" {
		return nil, errors.New("docker: no image (--docker-image)")
	}
	if opts.Helper == "" {
		return nil, errors.New("docker: no helper binary")
	}
	// Checked at once: a helper that cannot run in a container is a
	// setup error, not something to find out at a session's first command.
	if err := checkHelper(opts.Helper); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 2 * time.Second
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	host, fromContext, err := engineHost(opts.Host, opts.Getenv)
	if err != nil {
		return nil, err
	}
	cfg := engineConfig{host: host, getenv: opts.Getenv}
	if strings.HasPrefix(host, "ssh://") {
		// Ended as the docker CLI's ssh was (SIGTERM when the connection
		// closes), but by proctab, and by the watchdog with the agent.
		dial, err := newSSHDialer(host, opts.SSH, executor.ChildSpec{Watcher: opts.Watcher, RunMarker: opts.RunMarker, Grace: opts.KillGrace})
		if err != nil {
			return nil, err
		}
		cfg.sshDial = dial.dial
	} else if host != "" {
		cfg.tlsDir = fromContext.tls
	}
	cli, err := newEngine(cfg)
	if err != nil {
		return nil, fmt.Errorf("docker: engine address: %w", err)
	}
	hostname, _ := os.Hostname()
	return &Confiner{
		opts:   opts,
		cli:    cli,
		host:   cli.host,
		remote: isRemote(cli.host),
		agent:  hostname + "/" + strconv.Itoa(os.Getpid()),
		logger: opts.Logger,
		boxes:  map[boxKey]*box{},
	}, nil
}

// engineHost is the engine's address as the docker CLI finds it: the
// option, else DOCKER_HOST, else the current docker context's endpoint
// (returned too, for its TLS files), else "" (the default socket).
func engineHost(host string, getenv func(string) string) (string, dockerContext, error) {
	if host == "" {
		host = getenv("DOCKER_HOST")
	}
	if host != "" {
		return host, dockerContext{}, nil
	}
	c, ok, err := currentContext(getenv)
	if err != nil || !ok {
		return "", dockerContext{}, err
	}
	return c.host, c, nil
}

// RemoteEngine reports whether the engine the environment names (as
// NewConfiner finds it: DOCKER_HOST, else the docker CLI's current context)
// is on another host (tcp://, ssh://), whose writes to a shared tree raise
// no file-system event here. An engine that cannot be found is not remote.
func RemoteEngine(getenv func(string) string) bool {
	host, _, err := engineHost("", getenv)
	return err == nil && host != "" && isRemote(host)
}

// isRemote: the engine's host is not this one, so a path of ours may not
// exist there.
func isRemote(host string) bool {
	u, err := url.Parse(host)
	if err != nil {
		return true
	}
	return u.Scheme != "unix" && u.Scheme != "npipe"
}

// Start runs c's command in the container of its owner's session, making
// the container first if this is the session's first command.
func (d *Confiner) Start(c executor.Confinement) (executor.Process, error) {
	b, err := d.box(c)
	if err != nil {
		return nil, err
	}
	return b.start(c, d.env(c.Env))
}

// errStopped: the command was ended while its container was being made.
var errStopped = errors.New("docker: ended while the session's container was being made")

// box returns the owner's container, ready, creating it on first need. A
// creation that failed is forgotten, so the next command tries again (the
// engine may be back).
func (d *Confiner) box(c executor.Confinement) (*box, error) {
	root := c.Spec.Root
	if root == "" {
		root = c.Spec.Workdir
	}
	key := boxKey{c.Spec.Owner, root, strings.Join(c.Spec.Roots, "\x00")}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, executor.ErrClosed
	}
	b := d.boxes[key]
	if b != nil && b.cut() {
		// Its container ended under the session (removed, killed, the
		// engine restarted): the session gets a new one rather than an
		// error at every command from now on.
		delete(d.boxes, key)
		d.wg.Add(1)
		go func(old *box) {
			defer d.wg.Done()
			old.end()
		}(b)
		b = nil
	}
	if b == nil {
		b = newBox(d, key.owner, root, slices.Clone(c.Spec.Roots), c.SpillDir)
		d.boxes[key] = b
		d.wg.Add(1)
		go b.create()
	}
	d.mu.Unlock()
	select {
	case <-c.Stop:
		// Stopped already: not sent, even if the container is ready
		// (select would pick either at random).
		return nil, errStopped
	default:
	}
	select {
	case <-b.ready:
	case <-c.Stop:
		// The container goes on being made for the session's next command.
		return nil, errStopped
	}
	if b.err != nil {
		d.mu.Lock()
		if d.boxes[key] == b {
			delete(d.boxes, key)
		}
		d.mu.Unlock()
		return nil, b.err
	}
	return b, nil
}

// env is the command's environment with the image's PATH and the
// container's own /tmp (the host's name directories the container may not
// have), and without the Docker variables.
func (d *Confiner) env(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		// DOCKER_*: the engine's address, certificates and config are the
		// agent's, never a command's.
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "DOCKER_") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+d.imagePATH(), "TMPDIR=/tmp")
}

func (d *Confiner) imagePATH() string {
	d.imagePath.Do(func() {
		d.path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		env, err := d.cli.imageEnv(ctx, d.opts.Image)
		if err != nil {
			return
		}
		for _, kv := range env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				d.path = p
			}
		}
	})
	return d.path
}

// Release ends the owner's container: its helper ends every command (SIGTERM,
// the grace, then the container's end kills the rest) and the engine
// removes the container. It does not wait.
func (d *Confiner) Release(owner string) {
	var mine []*box
	d.mu.Lock()
	for k, b := range d.boxes {
		if k.owner == owner {
			mine = append(mine, b)
			delete(d.boxes, k)
		}
	}
	d.wg.Add(len(mine)) // under mu: Close's Wait cannot have begun with them uncounted
	d.mu.Unlock()
	for _, b := range mine {
		go func() {
			defer d.wg.Done()
			b.end()
		}()
	}
}

// Go runs fn on a goroutine that Close waits for (the sweep at start).
func (d *Confiner) Go(fn func()) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		fn()
	}()
}

// Close ends every container and returns when they are gone (or the engine
// stopped answering about them).
func (d *Confiner) Close() error {
	d.mu.Lock()
	d.closed = true
	boxes := d.boxes
	d.boxes = map[boxKey]*box{}
	d.wg.Add(len(boxes))
	d.mu.Unlock()
	for _, b := range boxes {
		go func() {
			defer d.wg.Done()
			b.end()
		}()
	}
	d.wg.Wait()
	d.cli.close()
	return nil
}
