package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// proc is one started `bash -c` and the process group it leads.
//
// Exactly one goroutine calls process.Wait, sets status and closes exited. The output pipes
// are ours (os.Pipe handed to the child as *os.File), so Wait never waits for
// a copy goroutine that a grandchild keeps alive (golang/go#23019); the two
// readers end at EOF or when collect sets a read deadline.
type proc struct {
	l       *Local
	status  syscall.WaitStatus // set before exited is closed
	waitErr error              // likewise
	started time.Time
	stdout  *capture
	stderr  *capture
	outR    *os.File
	errR    *os.File

	exited      chan struct{} // closed after process.Wait returned
	readersLeft atomic.Int32
	readersDone chan struct{} // closed when both readers returned
	termC       chan struct{} // closed by the first terminate
	// marker is a service's or background task's own environment entry
	// (see ownMarker), which every process it starts inherits, those that
	// leave its session included; empty for a foreground command. Set
	// before the start.
	marker string

	// mu guards the fields below.
	mu      sync.Mutex
	pgid    int       // 0 until started; also the session id (Setsid)
	termAt  time.Time // when SIGTERM was first requested
	byClose bool      // Close asked for the termination
	gone    bool      // the group is known empty: never signal it again (pid reuse)
	// remote is the process when its group is out of the executor's
	// reach (a container's): signals and liveness go through it.
	remote RemoteProcess
}

// Read buffers: the pipe's default capacity for most commands, a larger one
// for heavy producers (see growPipe).
var (
	readBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}
	bigBufs  = sync.Pool{New: func() any { b := make([]byte, bigPipe/4); return &b }}
)

func newProc(l *Local) *proc {
	return &proc{l: l, exited: make(chan struct{}), readersDone: make(chan struct{}), termC: make(chan struct{})}
}

// track makes a started process p's and returns its pid: the watchdog is
// told of it (unless it is remote), its group is recorded (a Close that
// came between the registration and the start sends its SIGTERM now), and
// one goroutine waits for it.
func (l *Local) track(p *proc, process Process) int {
	pid := process.Pid()
	p.started = time.Now()
	remote, _ := process.(RemoteProcess)
	if w := l.opts.Watcher; w != nil && remote == nil {
		w.Started(pid)
	}
	p.mu.Lock()
	p.pgid = pid
	p.remote = remote
	if !p.termAt.IsZero() {
		p.signal(unix.SIGTERM)
	}
	p.mu.Unlock()
	go func() {
		p.status, p.waitErr = process.Wait()
		if p.waitErr != nil {
			l.logger.Warn("wait for process", zap.Int("pid", pid), zap.Error(p.waitErr))
		}
		close(p.exited)
	}()
	return pid
}

// begin counts a new operation for Close to wait on, unless closed.
func (l *Local) begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.wg.Add(1)
	return nil
}

// spawn starts spec. The caller must hold a wg count (begin). label names
// the spill files; unreadBytes > 0 gives the streams a background read
// queue; marker, if set, is the process's own (see ownMarker).
func (l *Local) spawn(ctx context.Context, spec Spec, label string, unreadBytes int, marker string) (*proc, error) {
	fi, err := os.Stat(spec.Workdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("workdir %s does not exist", spec.Workdir)
	case err != nil:
		return nil, fmt.Errorf("workdir %s: %w", spec.Workdir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("workdir %s is not a directory", spec.Workdir)
	}
	shell, err := l.shellPath()
	if err != nil {
		return nil, err
	}

	p := newProc(l)
	p.marker = marker
	var obsOut, obsErr func([]byte, string)
	if obs := spec.Observe; obs != nil {
		obsOut = func(b []byte, spill string) { obs(Stdout, b, spill) }
		obsErr = func(b []byte, spill string) { obs(Stderr, b, spill) }
	}
	open := func(label string) (*os.File, error) { return l.spillFile(spec.Owner, label) }
	p.stdout = newCapture(label+"-stdout", l.opts.TailBytes, unreadBytes, open, l.logger, obsOut)
	p.stderr = newCapture(label+"-stderr", l.opts.TailBytes, unreadBytes, open, l.logger, obsErr)

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p.outR, p.errR = outR, errR

	// Registering under the lock that Close takes guarantees Close either
	// sees this proc (and terminates it) or we see closed.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		closeAll(outR, outW, errR, errW)
		return nil, ErrClosed
	}
	l.procs[p] = struct{}{}
	l.mu.Unlock()

	env := l.env
	if marker != "" {
		env = append(slices.Clip(env), marker)
	}
	// A run cancelled while its start waits (an engine making the
	// session's container) is ended as one cancelled later: terminate
	// closes termC, which the start gives up on, or, if the start won,
	// track signals the new group at once.
	stop := context.AfterFunc(ctx, func() { p.terminate(false) })
	process, err := l.start(shell, spec, env, outW, errW, p.termC)
	stop()
	// The child has its copies; ours must go or the readers never see EOF.
	closeAll(outW, errW)
	if err != nil {
		closeAll(outR, errR)
		l.forget(p)
		return nil, err
	}
	pid := l.track(p, process)
	l.logger.Debug("command started", zap.String("label", label), zap.Int("pgid", pid), zap.String("workdir", spec.Workdir))
	p.readersLeft.Store(2)
	go p.read(outR, p.stdout)
	go p.read(errR, p.stderr)
	return p, nil
}

// start is how one spec becomes a process: the single place that decides
// the argv, environment, descriptors and attributes of a command. A confined
// command (Spec.Sandboxed, or every one with ConfineAll) is the Confiner's
// to start; everything after (signals, reaping, the watchdog) is the same
// for both.
func (l *Local) start(shell string, spec Spec, env []string, stdout, stderr *os.File, stopC <-chan struct{}) (Process, error) {
	if spec.Sandboxed || l.opts.ConfineAll {
		if l.opts.Confine == nil {
			return nil, fmt.Errorf("start bash: %w", ErrNoSandbox)
		}
		root, own, err := l.spillDirs(spec.Owner)
		if err != nil {
			// Without its directories the other sessions' spill files could
			// not be kept out of reach: do not start.
			return nil, fmt.Errorf("start bash: sandbox: %w", err)
		}
		pr, err := l.opts.Confine.Start(Confinement{Shell: shell, Spec: spec, Env: env, SpillDir: own, PrivateDir: root, Stdout: stdout, Stderr: stderr, Stop: stopC})
		if err != nil {
			// The confiner's error names it (sandbox: …, docker: …).
			return nil, fmt.Errorf("start bash: %w", err)
		}
		return pr, nil
	}
	pr, err := StartCmd(&exec.Cmd{
		Path:   shell,
		Args:   []string{"bash", "-c", spec.Command},
		Dir:    spec.Workdir,
		Env:    env,
		Stdout: stdout,
		Stderr: stderr,
		// Setsid rather than only Setpgid: the new session is also a new
		// process group (pgid == sid == pid) and has no controlling
		// terminal, so ssh, sudo or gpg cannot open /dev/tty and wait for a
		// password nobody will type. The session is also what marks every
		// process of the command, those that leave its group included.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return nil, fmt.Errorf("start bash: %w", err)
	}
	return pr, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

func (l *Local) shellPath() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shell != "" {
		return l.shell, nil
	}
	name := l.opts.Shell
	if name == "" {
		name = "bash"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("start bash: %w", err)
	}
	l.shell = path
	return path, nil
}

func (l *Local) forget(p *proc) {
	l.mu.Lock()
	_, ok := l.procs[p]
	delete(l.procs, p)
	l.mu.Unlock()
	if pid := p.hostPid(); ok && pid > 0 {
		if w := l.opts.Watcher; w != nil {
			w.Ended(pid)
		}
	}
}

func (p *proc) read(f *os.File, c *capture) {
	bp := readBufs.Get().(*[]byte)
	buf := *bp
	var total int
	grown := false
	for {
		n, err := f.Read(buf)
		if n > 0 {
			_, _ = c.Write(buf[:n])
			total += n
			if !grown && total >= growPipeAfter {
				grown = true
				growPipe(f)
				readBufs.Put(bp)
				bp = bigBufs.Get().(*[]byte)
				buf = *bp
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drain(f, c, buf)
		}
		if err != nil {
			break
		}
	}
	if grown {
		bigBufs.Put(bp)
	} else {
		readBufs.Put(bp)
	}
	_ = f.Close()
	if p.readersLeft.Add(-1) == 0 {
		close(p.readersDone)
	}
}

// growPipeAfter is the stream size from which its pipe is enlarged to
// bigPipe. Only heavy producers get one: big pipes count against the user's
// pipe-user-pages-soft budget, and past it every new pipe of the user (the
// editor's included) is cut down to one page.
const (
	growPipeAfter = 1 << 20
	bigPipe       = 1 << 20
)

// maxDrain bounds the final drain: a leftover that keeps writing must not
// keep the reader looping.
const maxDrain = 1 << 20

// drain reads what is already in the pipe once the deadline cut the reader
// off. On a starved machine the reader may not have run at all before the
// grace expired; everything the shell wrote before exiting is still in the
// pipe buffer and must not be lost to a deadline.
func drain(f *os.File, c *capture, buf []byte) {
	ReadReady(f, buf, maxDrain, func(b []byte) { _, _ = c.Write(b) })
}

// ReadReady passes fn what the pipe f holds right now, a read of at most
// len(buf) bytes at a time, up to about limit bytes in all, and never waits
// for more: a writer that keeps writing must not keep the caller. It clears
// f's read deadline (a deadline is how the caller woke its reader for this).
func ReadReady(f *os.File, buf []byte, limit int, fn func([]byte)) {
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	total := 0
	_ = rc.Read(func(fd uintptr) bool {
		for total < limit {
			n, err := unix.Read(int(fd), buf)
			if n > 0 {
				fn(buf[:n])
				total += n
				continue
			}
			if !errors.Is(err, unix.EINTR) {
				break // EOF, EAGAIN (nothing more right now) or a real error
			}
		}
		return true // never wait for more
	})
}

// waitLeader returns when the shell has exited. abort and timeout (either may
// be nil) call fire once each; a terminate, whoever asked for it, arms the
// SIGKILL that follows after the grace.
func (p *proc) waitLeader(abort <-chan struct{}, timeout <-chan time.Time, fire func(byTimer bool)) {
	termC := p.termC
	var killTimer *time.Timer
	var killC <-chan time.Time
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	for {
		select {
		case <-p.exited:
			return
		case <-timeout:
			timeout = nil
			fire(true)
		case <-abort:
			abort = nil
			fire(false)
		case <-termC:
			termC = nil
			p.mu.Lock()
			left := p.l.opts.KillGrace - time.Since(p.termAt)
			p.mu.Unlock()
			killTimer = time.NewTimer(max(left, 0))
			killC = killTimer.C
		case <-killC:
			killC = nil
			p.kill()
		}
	}
}

// collect waits for the output pipes after the shell exited. Whatever still
// holds them after LeftoverGrace was left behind by the command: it is
// terminated and the pipes stop being read.
func (p *proc) collect() {
	grace := time.NewTimer(p.l.opts.LeftoverGrace)
	defer grace.Stop()
	select {
	case <-p.readersDone:
	case <-grace.C:
		p.l.logger.Debug("output held open after exit; terminating leftovers", zap.Int("pgid", p.pgid))
		p.terminate(false)
		now := time.Now()
		_ = p.outR.SetReadDeadline(now)
		_ = p.errR.SetReadDeadline(now)
		<-p.readersDone
	}
	p.stdout.finish()
	p.stderr.finish()
}

// exit decodes the shell's wait status.
func (p *proc) exit() (code int, signal string) {
	ws := p.status
	if p.waitErr != nil {
		return -1, ""
	}
	if ws.Signaled() {
		return -1, unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

// terminate sends SIGTERM to the group once; later calls do not restart the
// escalation. It reports whether this call started it.
func (p *proc) terminate(byClose bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if byClose {
		p.byClose = true
	}
	if !p.termAt.IsZero() || p.gone {
		return false
	}
	p.termAt = time.Now()
	if p.pgid > 0 {
		p.signal(unix.SIGTERM)
	}
	close(p.termC)
	return true
}

func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signal(unix.SIGKILL)
}

// signal sends sig to the group and, once the command is being ended, to
// every other group of its session: what left the group (coreutils
// `timeout`, `set -m` jobs) is still the command's. Close walks the
// sessions of everything at once instead (see Close). p.mu must be held.
func (p *proc) signal(sig unix.Signal) {
	if p.gone || p.pgid <= 0 {
		return
	}
	if p.remote != nil {
		// The helper walks the session itself; Close's walk of the host's
		// table cannot see it, so it always does once the end began.
		if err := p.remote.Signal(sig, !p.termAt.IsZero()); err != nil {
			p.l.logger.Warn("signal remote process group", zap.Int("pgid", p.pgid), zap.Stringer("signal", sig), zap.Error(err))
		}
		return
	}
	err := proctab.SignalGroup(p.pgid, sig)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		p.l.logger.Warn("signal process group", zap.Int("pgid", p.pgid), zap.Stringer("signal", sig), zap.Error(err))
	}
	if !p.termAt.IsZero() && !p.byClose {
		var markers []string
		if p.marker != "" {
			markers = []string{p.marker}
		}
		if _, err := proctab.SignalSession(p.pgid, sig, markers...); err != nil {
			p.l.logger.Warn("signal session", zap.Int("sid", p.pgid), zap.Stringer("signal", sig), zap.Error(err))
		}
	}
}

// hostPid is pid for a command of this host's process table, 0 for a
// remote one (its pid means nothing here: it is not to be signalled).
func (p *proc) hostPid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.remote != nil {
		return 0
	}
	return p.pgid
}

func (p *proc) closing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byClose
}

// checkGone marks the group gone if it is, and reports it. A command being
// ended is gone only once its whole session is; one that ended by itself
// is judged by its group, so a finished command costs no table walk.
func (p *proc) checkGone() bool {
	p.mu.Lock()
	gone, pgid, remote := p.gone, p.pgid, p.remote
	walk := !p.termAt.IsZero() && !p.byClose
	p.mu.Unlock()
	if gone {
		return true
	}
	if alive(remote, pgid, walk, p.marker) {
		return false
	}
	p.mu.Lock()
	p.gone = true
	p.mu.Unlock()
	p.l.forget(p)
	return true
}

// alive reports whether a process of the group, or with walk of its
// session or carrying its marker (a service's), is left.
func alive(remote RemoteProcess, pgid int, walk bool, marker string) bool {
	if remote != nil {
		return remote.Alive(walk)
	}
	return proctab.GroupAlive(pgid) || (walk && proctab.SessionOrMarkedAlive(pgid, marker))
}

// reapLater makes sure the group of a finished foreground run goes away
// without making the caller wait for it. The caller holds a wg count.
func (l *Local) reapLater(p *proc) {
	if p.checkGone() {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		p.reap()
	}()
}

// reap terminates whatever is left of the group after the shell exited and
// returns when the group is gone: proctab.End ends it, the session's other
// groups and its marked processes (a command's own session and markers),
// with the SIGKILL once the kill grace since the SIGTERM has passed.
func (p *proc) reap() {
	if p.checkGone() {
		return
	}
	p.terminate(false)
	p.mu.Lock()
	pgid, remote, left := p.pgid, p.remote, p.l.opts.KillGrace-time.Since(p.termAt)
	p.mu.Unlock()
	// terminate sent every SIGTERM due (Close's walk did, if it asked).
	e := proctab.Ending{AllTermed: true, Grace: max(left, 0)}
	if remote != nil {
		e.Targets = []proctab.Target{remoteTarget{p}}
	} else {
		e.Sessions = map[int]bool{pgid: true}
		if p.marker != "" {
			e.Markers = []string{p.marker}
		}
	}
	if err := proctab.End(e); err != nil {
		p.l.logger.Warn("end leftovers", zap.Int("pgid", pgid), zap.Error(err))
		p.kill()
		return
	}
	p.checkGone()
}

// remoteTarget is a command whose group only its remote owner (a
// container's helper) can signal and see.
type remoteTarget struct{ p *proc }

func (r remoteTarget) Signal(sig unix.Signal) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.signal(sig)
}

func (r remoteTarget) Alive() bool { return !r.p.checkGone() }
