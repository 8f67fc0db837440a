package mcptool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
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

// Launcher starts a session's stdio servers. The executor fills it: a
// server is one of the session's processes, started, watched and ended as
// its background tasks are (with the session, with the agent, whatever
// ends the agent), and mcptool starts no process itself.
type Launcher interface {
	Launch(spec Launch) (Process, error)
}

// Launch is one stdio server to start.
type Launch struct {
	// Path is the program's absolute path; Args its argv, Args[0] included.
	Path string
	Args []string
	// Dir is the absolute directory it runs in.
	Dir string
	// Env is its whole environment (see BaseEnvNames).
	Env []string
	// Stderr receives its stderr; the caller closes its copy once Launch
	// returned.
	Stderr *os.File
}

// Process is a started stdio server as this package uses it: a connection
// and a wait. Its end, with every grace, is the Launcher's.
type Process interface {
	// Pid is the server's pid, also its process group.
	Pid() int
	// Stdin and Stdout are the server's end of the protocol.
	Stdin() io.WriteCloser
	Stdout() io.ReadCloser
	// Wait returns once the server's own process has ended: nil for exit
	// status 0, else how, e.g. "exit status 1".
	Wait() error
	// Stop starts ending the server and everything it started at once
	// (it never answered) and returns.
	Stop()
	// Close ends the server as the MCP specification asks: its stdin
	// closed, a grace to exit, then SIGTERM and SIGKILL after a grace; it
	// returns once no process of the server is left (Wait then returns at
	// once). After Stop it waits for the end Stop began.
	Close() error
}

// stdioProc is a stdio server's process as this package sees it: the
// Process the Launcher gave (nil until then), and the stderr pipe.
type stdioProc struct {
	stderrR    *os.File
	stderrW    *os.File
	stderrDone chan struct{}
	// grace bounds the wait for the stderr pipe's end once the server's
	// processes are gone (see drain).
	grace time.Duration
	log   *zap.Logger

	// closeOnce starts the Launcher's Close of the server once; closed is
	// closed when it returned (no process of the server is left).
	closeOnce sync.Once
	closed    chan struct{}

	// mu guards the fields below.
	mu   sync.Mutex
	proc Process
	tail []string
}

// newStdioProc prepares the server's launch. The caller starts it through
// the returned transport.
func newStdioProc(cfg ServerConfig, opts Options, log *zap.Logger) (*stdioProc, *launchTransport, error) {
	if opts.Launcher == nil {
		return nil, nil, errors.New("no launcher for stdio servers")
	}
	env := serverEnv(opts.BaseEnv, cfg.Env)
	path, err := lookPath(cfg.Command, env, opts.Cwd)
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p := &stdioProc{stderrR: r, stderrW: w, stderrDone: make(chan struct{}), grace: opts.KillGrace, log: log}
	go p.readStderr()
	t := &launchTransport{
		launcher: opts.Launcher,
		spec:     Launch{Path: path, Args: append([]string{cfg.Command}, cfg.Args...), Dir: opts.Cwd, Env: env, Stderr: w},
		proc:     p,
		log:      log,
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

func (p *stdioProc) process() Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

func (p *stdioProc) group() int {
	if pr := p.process(); pr != nil {
		return pr.Pid()
	}
	return 0
}

// exitErr is how the server's process ended. It is asked once the
// server was closed (awaitExit, finish), when Wait returns at once.
func (p *stdioProc) exitErr() error {
	if pr := p.process(); pr != nil {
		return pr.Wait()
	}
	return nil
}

func (p *stdioProc) stderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " / ")
}

// terminate starts ending the server at once, if it was launched.
func (p *stdioProc) terminate() {
	if pr := p.process(); pr != nil {
		pr.Stop()
	}
}

// close starts the Launcher's Close of pr (once) and returns a channel
// closed once it returned: no process of the server is left.
func (p *stdioProc) close(pr Process) <-chan struct{} {
	p.closeOnce.Do(func() {
		p.closed = make(chan struct{})
		go func() {
			defer close(p.closed)
			_ = pr.Close()
		}()
	})
	return p.closed
}

// awaitExit returns when the server, which ended the connection, is over
// — its own process: what it started may still be ending (the Launcher's
// Close ends a server that closed its stdout but runs on after its grace)
// — and its stderr was read to the end. A call that saw the connection
// break waits for this, the cause, not for the end of everything.
func (p *stdioProc) awaitExit() {
	if pr := p.process(); pr != nil {
		p.close(pr)
		_ = pr.Wait()
	}
	p.drain(false)
}

// finish returns when the server's processes are gone (the Launcher's
// Close, after a terminate or not) and its stderr was read.
func (p *stdioProc) finish() {
	if pr := p.process(); pr != nil {
		<-p.close(pr)
	}
	p.drain(true)
}

// drain waits for the stderr reader once every known writer is gone (our
// copy of the write end included, closed here), at most the grace: a
// process that kept the pipe but is not known to be the server's (it
// cleared its environment) is not waited for. With last, the read end is
// closed then, and the reader returns.
func (p *stdioProc) drain(last bool) {
	_ = p.stderrW.Close()
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
	if last {
		_ = p.stderrR.Close()
		<-p.stderrDone
	}
}

// launchTransport launches the server through the Launcher and speaks the
// protocol over its stdin and stdout.
type launchTransport struct {
	launcher Launcher
	spec     Launch
	proc     *stdioProc
	log      *zap.Logger

	// conn is the connection Connect returned (nil before, or if it failed).
	conn mcp.Connection
}

func (t *launchTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, err := t.launcher.Launch(t.spec)
	// The child has its copy of the stderr pipe's write end; ours must go
	// or the reader never sees EOF.
	_ = t.proc.stderrW.Close()
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	t.proc.mu.Lock()
	t.proc.proc = pr
	t.proc.mu.Unlock()
	t.log.Info("mcp server spawned", zap.Int("pgid", pr.Pid()))
	conn, err := (&mcp.IOTransport{Reader: pr.Stdout(), Writer: pr.Stdin()}).Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	t.conn = conn
	return conn, nil
}
