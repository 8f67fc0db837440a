// Package watchdog ends a program's commands when the program itself ends,
// however it ends: stdin closed, a signal, SIGKILL, a crash, the OOM killer.
//
// The watchdog is a second process (the program's own binary, re-executed in
// a hidden mode) that holds the read end of a pipe whose only write end is
// the program's. The program tells it every command session as it starts and
// when its process group is gone. When the pipe reaches EOF — which the
// kernel guarantees whenever the program is gone, since nothing else holds
// the write end — the watchdog ends every session still registered, SIGTERM
// and then SIGKILL after the grace, and exits. Nothing of it is on the
// command's path but one small write to a pipe.
package watchdog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// Options configure the program's side.
type Options struct {
	// Path is the binary to run as the watchdog, Args its argv (Args[0]
	// included) selecting the hidden mode that calls Serve.
	Path string
	Args []string
	// Logger receives diagnostics. Nil means zap.NewNop().
	Logger *zap.Logger
}

// Client is the program's end of the pipe. It implements executor.Watcher.
type Client struct {
	cmd    *exec.Cmd
	logger *zap.Logger
	exited chan struct{}

	// mu guards the fields below and orders writes.
	mu     sync.Mutex
	w      *os.File // nil once closed
	broken bool     // a write failed: the watchdog is gone
}

// Start launches the watchdog. Its stdin is the pipe; stdout and stderr are
// /dev/null, so it holds none of the program's stdio (an editor waiting for
// EOF on them is not kept waiting) and can never write to the protocol. It
// gets a session of its own, so a signal to the program's process group (a
// terminal's Ctrl-C, an editor killing the group) does not take it along
// before it has done its work, and an empty environment: it needs nothing.
func Start(opts Options) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	r, w, err := os.Pipe() // close-on-exec: no command inherits the write end
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        opts.Path,
		Args:        opts.Args,
		Env:         []string{},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	c := &Client{cmd: cmd, logger: opts.Logger, w: w, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Pid is the watchdog's process id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Started registers session sid.
func (c *Client) Started(sid int) { c.send('+', sid) }

// Ended says the process group of session sid is gone. The watchdog keeps
// the session until a walk of the process table finds it empty: what left
// the group may still live on in it.
func (c *Client) Ended(sid int) { c.send('-', sid) }

func (c *Client) send(op byte, sid int) {
	var buf [24]byte
	b := strconv.AppendInt(append(buf[:0], op), int64(sid), 10)
	b = append(b, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil || c.broken {
		return
	}
	// Lines are far below PIPE_BUF: each write is atomic.
	if _, err := c.w.Write(b); err != nil {
		c.broken = true
		c.logger.Error("watchdog gone: commands may outlive the agent if it dies", zap.Error(err))
	}
}

// Close closes the pipe, which tells the watchdog to end whatever is still
// registered, and waits until it has exited or timeout passed. The caller
// normally ended every command already, so the watchdog finds nothing and
// exits at once.
func (c *Client) Close(timeout time.Duration) error {
	c.mu.Lock()
	w := c.w
	c.w = nil
	c.mu.Unlock()
	if w == nil {
		return nil
	}
	err := w.Close()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		return errors.Join(err, fmt.Errorf("watchdog %d still running after %v", c.cmd.Process.Pid, timeout))
	}
	return err
}

// ServeOptions configure the watchdog's side.
type ServeOptions struct {
	// Grace is the time between SIGTERM and SIGKILL. Zero means 3s.
	Grace time.Duration
	// Marker is an environment entry ("NAME=VALUE") that every command
	// inherits. Where the platform lets a process read another's
	// environment (Linux), processes carrying it are ended too, even if they
	// left the session (setsid, a double-forked daemon) or started in the
	// instant between the fork and their registration. Empty: none.
	Marker string
	// PruneEvery is how often ended sessions are checked for leftover
	// members (one walk of the process table) and dropped when empty.
	// Zero means 1s.
	PruneEvery time.Duration
}

// Serve is the watchdog: it reads registrations from r until EOF, then ends
// every registered session and every marked process, and returns.
func Serve(r io.Reader, opts ServeOptions) error {
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.PruneEvery == 0 {
		opts.PruneEvery = time.Second
	}
	msgs := make(chan msg, 256)
	readErr := make(chan error, 1)
	go func() { readErr <- readMsgs(r, msgs) }()

	reg := registry{live: make(map[int]bool), ended: make(map[int]bool)}
	prune := time.NewTicker(opts.PruneEvery)
	defer prune.Stop()
	for done := false; !done; {
		select {
		case m, ok := <-msgs:
			if !ok {
				done = true
				break
			}
			reg.apply(m)
		case <-prune.C:
			reg.prune()
		}
	}
	endAll(reg.all(), opts.Marker, opts.Grace)
	return <-readErr
}

// msg is one registration: '+' a session started, '-' its group is gone.
type msg struct {
	op  byte
	sid int
}

// readMsgs sends the registrations read from r to msgs and closes it at
// EOF (nil) or on a read error (returned). Malformed lines are skipped.
func readMsgs(r io.Reader, msgs chan<- msg) error {
	defer close(msgs)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(line) < 3 {
			continue
		}
		sid, err := strconv.Atoi(string(line[1 : len(line)-1]))
		if err != nil || sid <= 1 {
			continue
		}
		msgs <- msg{line[0], sid}
	}
}

// registry is the sessions the watchdog would end now. live: registered,
// group not known gone. ended: group gone, session not yet known empty.
type registry struct {
	live, ended map[int]bool
}

func (g *registry) apply(m msg) {
	switch m.op {
	case '+':
		g.live[m.sid] = true
		delete(g.ended, m.sid)
	case '-':
		if g.live[m.sid] {
			delete(g.live, m.sid)
			g.ended[m.sid] = true
		}
	}
}

// prune drops the ended sessions that have no live member left. A session
// number cannot be reused while a member lives, so dropping only empty
// ones never loses a command's process; dropping them soon keeps a reused
// number from being taken for ours.
func (g *registry) prune() {
	if len(g.ended) == 0 {
		return
	}
	ps, err := proctab.List()
	if err != nil {
		return
	}
	alive := make(map[int]bool)
	for _, p := range ps {
		if !p.Zombie && g.ended[p.Sid] {
			alive[p.Sid] = true
		}
	}
	for sid := range g.ended {
		if !alive[sid] {
			delete(g.ended, sid)
		}
	}
}

// all is every session still to end.
func (g *registry) all() map[int]bool {
	sids := make(map[int]bool, len(g.live)+len(g.ended))
	for sid := range g.live {
		sids[sid] = true
	}
	for sid := range g.ended {
		sids[sid] = true
	}
	return sids
}

// endAll sends SIGTERM to every group of the sessions and every marked
// process, SIGKILL after grace to what is left, and returns when nothing is
// left or a second after the SIGKILL (a process stuck in the kernel cannot
// be helped by waiting longer).
func endAll(sids map[int]bool, marker string, grace time.Duration) {
	var markers []string
	if marker != "" {
		markers = []string{marker}
	}
	err := proctab.End(proctab.Ending{Sessions: sids, Markers: markers, Grace: grace, GiveUp: time.Second})
	if err != nil {
		// Without a table, the groups are still reachable directly.
		for sid := range sids {
			_ = proctab.SignalGroup(sid, unix.SIGKILL)
		}
	}
}
