package mcptool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// BaseEnvNames are the variables a stdio server inherits from the agent's
// environment; everything else it gets comes from its own configuration.
// They are what a server launched by npx, uvx or a shell script needs to
// find its interpreter, its caches and a locale — and they are the POSIX
// default of the reference MCP SDKs, plus the locale and TMPDIR. The model
// API key and the rest of the agent's environment never reach a server
// unless the editor configured them for it.
var BaseEnvNames = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"}

// serverEnv is the base (filtered to BaseEnvNames) with the configured
// variables on top; a configured variable replaces a base one of the same
// name, and a later configured one replaces an earlier.
func serverEnv(base []string, configured []NameValue) []string {
	keep := make(map[string]bool, len(BaseEnvNames))
	for _, n := range BaseEnvNames {
		keep[n] = true
	}
	var names []string
	vals := map[string]string{}
	set := func(name, value string) {
		if _, ok := vals[name]; !ok {
			names = append(names, name)
		}
		vals[name] = value
	}
	seen := map[string]bool{}
	for _, kv := range base {
		name, value, ok := strings.Cut(kv, "=")
		// The first occurrence wins, as getenv(3) reads it. A value that
		// starts with "()" is an exported bash function, never wanted.
		if !ok || !keep[name] || seen[name] || strings.HasPrefix(value, "()") {
			continue
		}
		seen[name] = true
		set(name, value)
	}
	for _, nv := range configured {
		if nv.Name == "" || strings.ContainsAny(nv.Name, "=\x00") {
			continue
		}
		set(nv.Name, nv.Value)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n+"="+vals[n])
	}
	return out
}

// lookPath resolves command in the PATH of env (not the agent's own, which
// the editor's configuration may replace). A command with a slash is used
// as is, relative to dir.
func lookPath(command string, env []string, dir string) (string, error) {
	if command == "" {
		return "", errors.New("no command configured")
	}
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return p, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, command)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// stderrTailLines is how many of the last stderr lines a failure names.
const (
	stderrTailLines = 3
	stderrLineMax   = 300
)

// stdioProc is a stdio server's process group. The MCP SDK's command
// transport owns the process (it calls Wait when the connection closes);
// this owns the group: signals to it, the wait for it to be gone, and the
// stderr pipe.
type stdioProc struct {
	cmd        *exec.Cmd
	stderrR    *os.File
	stderrW    *os.File
	stderrDone chan struct{}
	grace      time.Duration
	log        *zap.Logger

	// mu guards the fields below.
	mu     sync.Mutex
	pgid   int
	termAt time.Time
	// closed: the connection's Close returned (the leader was waited for
	// or given up on); closeErr is what it returned (cmd.Wait's error).
	closed   bool
	closeErr error
	tail     []string
}

// newStdioProc prepares the command. The caller starts it through the
// returned transport.
func newStdioProc(cfg ServerConfig, opts Options, log *zap.Logger) (*stdioProc, *groupTransport, error) {
	env := serverEnv(opts.BaseEnv, cfg.Env)
	path, err := lookPath(cfg.Command, env, opts.Cwd)
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{cfg.Command}, cfg.Args...),
		Dir:  opts.Cwd,
		Env:  env,
		// An *os.File, so exec starts no copy goroutine that a grandchild
		// holding the pipe could keep Wait waiting on.
		Stderr: w,
		// Setsid, not only Setpgid: the new session is also a new process
		// group (pgid == pid) and has no controlling terminal, so a server
		// cannot read from or stop on the terminal of `dsh-acp exec`.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	p := &stdioProc{cmd: cmd, stderrR: r, stderrW: w, stderrDone: make(chan struct{}), grace: opts.KillGrace, log: log}
	go p.readStderr()
	t := &groupTransport{
		inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: opts.KillGrace},
		proc:  p,
	}
	return p, t, nil
}

// readStderr logs every line the server writes to stderr and keeps the
// last few for failure messages. It returns at EOF.
func (p *stdioProc) readStderr() {
	defer close(p.stderrDone)
	sc := bufio.NewScanner(p.stderrR)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		line := sc.Text()
		p.log.Info("mcp server stderr", zap.String("line", line))
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(line) > stderrLineMax {
			line = line[:stderrLineMax] + "…"
		}
		p.mu.Lock()
		p.tail = append(p.tail, line)
		if len(p.tail) > stderrTailLines {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
	}
	// A line longer than the buffer ends the scanner early: drain the rest
	// so the server never blocks on a full stderr pipe.
	_, _ = io.Copy(io.Discard, p.stderrR)
}

func (p *stdioProc) group() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pgid
}

// exitErr is what waiting for the leader returned, once the connection has
// been closed.
func (p *stdioProc) exitErr() (error, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closeErr, p.closed
}

func (p *stdioProc) stderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " / ")
}

// terminate sends SIGTERM to the group (and SIGCONT, so a stopped member
// gets it) and starts the grace after which finish sends SIGKILL.
func (p *stdioProc) terminate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pgid <= 0 {
		return
	}
	if p.termAt.IsZero() {
		p.termAt = time.Now()
	}
	p.signal(unix.SIGTERM)
	p.signal(unix.SIGCONT)
}

// signal sends sig to the group; p.mu must be held.
func (p *stdioProc) signal(sig unix.Signal) {
	if err := unix.Kill(-p.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		p.log.Warn("signal mcp server group", zap.Int("pgid", p.pgid), zap.Stringer("signal", sig), zap.Error(err))
	}
}

// finish returns when the group is gone: it terminates what is left,
// SIGKILLs it once the grace since terminate has passed, and waits for the
// stderr reader. Nothing announces the death of group members that are not
// our children, so it polls, backing off to 50ms.
func (p *stdioProc) finish() {
	p.mu.Lock()
	pgid := p.pgid
	p.mu.Unlock()
	if pgid > 0 {
		p.terminate()
		wait := 2 * time.Millisecond
		t := time.NewTimer(wait)
		killed := time.Time{}
		for groupAlive(pgid) {
			p.mu.Lock()
			since := time.Since(p.termAt)
			if since >= p.grace && killed.IsZero() {
				p.signal(unix.SIGKILL)
				killed = time.Now()
			}
			p.mu.Unlock()
			if !killed.IsZero() && time.Since(killed) > 5*time.Second {
				p.log.Warn("mcp server group survives SIGKILL", zap.Int("pgid", pgid))
				break
			}
			t.Reset(wait)
			<-t.C
			wait = min(2*wait, 50*time.Millisecond)
		}
		t.Stop()
	}
	_ = p.stderrW.Close()
	// Every writer of the stderr pipe is gone, unless something left the
	// group (setsid); do not wait for that one.
	select {
	case <-p.stderrDone:
	case <-time.After(p.grace):
	}
	_ = p.stderrR.Close()
	<-p.stderrDone
}

// groupTransport starts the command through the SDK's CommandTransport and
// records the process group and the result of the connection's Close.
type groupTransport struct {
	inner *mcp.CommandTransport
	proc  *stdioProc
	// onStart is called with the pgid right after the spawn.
	onStart func(pgid int)

	// conn is the connection Connect returned (nil before, or if it failed).
	conn *recordingConn
}

func (t *groupTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	// The child has its copy of the stderr pipe's write end; ours must go
	// or the reader never sees EOF.
	_ = t.proc.stderrW.Close()
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	pid := t.inner.Command.Process.Pid
	t.proc.mu.Lock()
	t.proc.pgid = pid
	t.proc.mu.Unlock()
	if t.onStart != nil {
		t.onStart(pid)
	}
	t.conn = &recordingConn{Connection: conn, proc: t.proc}
	return t.conn, nil
}

// recordingConn keeps the result of the first Close: for a command
// connection that is cmd.Wait's error (the exit status).
type recordingConn struct {
	mcp.Connection
	proc *stdioProc
}

func (c *recordingConn) Close() error {
	err := c.Connection.Close()
	c.proc.mu.Lock()
	if !c.proc.closed {
		c.proc.closed, c.proc.closeErr = true, err
	}
	c.proc.mu.Unlock()
	return err
}
