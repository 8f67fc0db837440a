package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// Zygote is the agent's side of one zygote process: it starts commands
// confined to one policy. It is safe for concurrent use.
type Zygote struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	ns   bool
	done chan struct{} // closed when the reader returned

	// watch are the directories whose entries the Landlock rules name one
	// by one (Landlock alone, see ruleSet.descended), with their mtimes
	// when the rules were made: once one changed, the rules miss an entry.
	watch map[string]time.Time
	// dirs are the workdir, the temporary directory and the other
	// writable trees (a session's other roots) as the rules name them
	// (by inode): one removed and made again at the same path is another
	// directory, which the rules do not cover.
	dirs    map[string]os.FileInfo
	waitErr error        // the zygote's exit, set before done is closed
	used    atomic.Int64 // when a command last came (Unix ns), for the Confiner

	// mu guards the fields below.
	mu      sync.Mutex
	next    uint64
	starts  map[uint64]chan startReply
	procs   map[uint64]*zproc
	err     error // why the zygote is gone; nil while it serves
	retired bool  // takes no new command; ends when its last one has
}

type startReply struct {
	proc *zproc
	err  error
}

// Zygote starts a zygote for p. Close it when done: that ends it and, with
// namespaces, every process left in them.
func (l *Launcher) Zygote(p Policy) (*Zygote, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	p.Workdir = filepath.Clean(p.Workdir)
	pr, err := policyPipe(wirePolicy{Policy: p, Namespaces: l.Namespaces(), NetNS: l.avail.NetNS})
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	conn, theirs, err := zygoteSocket()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	ns := l.Namespaces()
	z := &Zygote{
		conn:   conn,
		ns:     ns,
		dirs:   sessionDirs(p),
		done:   make(chan struct{}),
		starts: map[uint64]chan startReply{},
		procs:  map[uint64]*zproc{},
	}
	if !ns {
		// Stat before the zygote lists them: a change in between shows as
		// one at the next command, never goes unseen.
		z.watch = descendedDirs(p)
	}
	z.cmd = &exec.Cmd{
		Path:        l.exe,
		Args:        []string{helperArg0},
		Env:         []string{helperEnv + "=" + stageZygote},
		Dir:         "/",
		ExtraFiles:  []*os.File{pr, theirs},
		SysProcAttr: l.zygoteAttr(p),
	}
	if err := z.cmd.Start(); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("start zygote: %w", err)
	}
	go z.read()
	return z, nil
}

// zygoteSocket makes the agent's and the zygote's ends of their socket.
func zygoteSocket() (ours *net.UnixConn, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("zygote socket: %w", err)
	}
	// The kernel translates the pid a zygote in a PID namespace names in
	// its credentials only for a receiver that asks for credentials.
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		return nil, nil, fmt.Errorf("zygote socket: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "zygote")
	theirs = os.NewFile(uintptr(fds[1]), "zygote")
	fc, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		_ = theirs.Close()
		return nil, nil, fmt.Errorf("zygote socket: %w", err)
	}
	return fc.(*net.UnixConn), theirs, nil
}

// sessionDirs are p's workdir, temporary directory and other writable
// trees as they are now (see Zygote.dirs).
func sessionDirs(p Policy) map[string]os.FileInfo {
	dirs := map[string]os.FileInfo{}
	for _, d := range append([]string{p.Workdir, p.TempDir}, p.Write...) {
		if fi, err := os.Stat(d); err == nil && d != "" {
			dirs[d] = fi
		}
	}
	return dirs
}

// descendedDirs are the directories whose entries p's Landlock rules
// name one by one, with their mtimes now (see Zygote.watch).
func descendedDirs(p Policy) map[string]time.Time {
	watch := map[string]time.Time{}
	for _, d := range buildRules(p, nil).descended() {
		if fi, err := os.Stat(d); err == nil {
			watch[d] = fi.ModTime()
		}
	}
	return watch
}

// zygoteAttr is how the zygote starts: in a session of its own and, with
// namespaces, in new user, PID, mount (and network) namespaces.
//
// It is killed when the agent is: the zygote exits at EOF on its socket,
// but one stopped (by a command, or from outside) would never see it.
// The kernel sends Pdeathsig when the thread that forked the child ends,
// not the process; the agent never ends a thread (nothing in it returns
// from a goroutine with its thread locked), so here that is the agent's
// end. (In a PID namespace Go's check that the parent still lives reads
// a ppid of 0 and signals the child itself, which as the namespace's init
// ignores it, as the probe's children do.)
func (l *Launcher) zygoteAttr(p Policy) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !l.Namespaces() {
		return attr
	}
	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if !p.Network && l.avail.NetNS {
		flags |= unix.CLONE_NEWNET
	}
	attr.Cloneflags = flags
	// The same ids inside: files and `id` look as they do outside.
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	if uid != 0 {
		// A non-root zygote loses its namespace capabilities at exec
		// unless they are ambient: it needs CAP_SYS_ADMIN to mount
		// /proc and to name its children's pids in credentials. Its
		// spawning thread clears the ambient set, so bash starts
		// without it.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// StartIn runs `bash -c command` in the zygote with env (as given: see
// commandEnv for TMPDIR), writing to stdout and stderr, in the directory
// dir (empty: the policy's Workdir), which the policy need not let the
// command write; its stdin is /dev/null. The caller keeps and closes its
// copies of stdout and stderr.
func (z *Zygote) StartIn(dir, command string, env []string, stdout, stderr *os.File) (executor.Process, error) {
	payload, err := json.Marshal(executor.StartRequest{Command: command, Dir: dir, Env: env})
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	mfd, err := unix.MemfdCreate("dsh-acp-command", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("command memfd: %w", err)
	}
	mem := os.NewFile(uintptr(mfd), "command")
	defer mem.Close()
	if _, err := mem.Write(payload); err != nil {
		return nil, fmt.Errorf("command memfd: %w", err)
	}

	z.mu.Lock()
	if z.err != nil {
		z.mu.Unlock()
		return nil, z.err
	}
	if z.retired {
		z.mu.Unlock()
		return nil, errors.New("sandbox helper retired")
	}
	z.next++
	id := z.next
	reply := make(chan startReply, 1)
	z.starts[id] = reply
	z.mu.Unlock()

	msg, _ := json.Marshal(zygoteMsg{ID: id, Start: true})
	rights := unix.UnixRights(int(stdout.Fd()), int(stderr.Fd()), int(mem.Fd()))
	if _, _, err := z.conn.WriteMsgUnix(msg, rights, nil); err != nil {
		z.mu.Lock()
		delete(z.starts, id)
		z.mu.Unlock()
		return nil, fmt.Errorf("zygote: %w", err)
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case r := <-reply:
		if r.err != nil {
			return nil, r.err
		}
		return r.proc, nil
	case <-t.C:
		// A zygote that does not answer (stopped from outside, starved)
		// must not hang the session: it is ended, which fails what it
		// holds, and the next command gets a new one.
		_ = proctab.SignalProcess(z.cmd.Process, unix.SIGKILL)
		if r := <-reply; r.err == nil {
			return r.proc, nil
		}
		return nil, fmt.Errorf("sandbox helper did not answer in %v", startTimeout)
	}
}

// startTimeout bounds the wait for a zygote's answer to a start: a fork
// and an exec, milliseconds even on a loaded machine.
var startTimeout = 30 * time.Second

// usable reports whether the zygote still serves and its rules still
// cover every entry of the directories they descend, and the workdir and
// temporary directory at their paths.
func (z *Zygote) usable() bool {
	z.mu.Lock()
	ok := z.err == nil && !z.retired
	z.mu.Unlock()
	if !ok {
		return false
	}
	for d, mtime := range z.watch {
		fi, err := os.Stat(d)
		if err != nil || !fi.ModTime().Equal(mtime) {
			return false
		}
	}
	for d, was := range z.dirs {
		if fi, err := os.Stat(d); err != nil || !os.SameFile(fi, was) {
			return false
		}
	}
	return true
}

// ended reports whether the zygote has exited and been reaped.
func (z *Zygote) ended() bool {
	select {
	case <-z.done:
		return true
	default:
		return false
	}
}

// retire takes the zygote out of service: it takes no new command and
// ends once its last command has (commands of a zygote without namespaces
// outlive it, but their end is reported only by it).
func (z *Zygote) retire() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.retired = true
	z.endIfIdle()
}

// endIfIdle closes a retired zygote's socket once nothing is pending; the
// reader then sees EOF and reaps it. z.mu must be held.
func (z *Zygote) endIfIdle() {
	if z.retired && len(z.starts) == 0 && len(z.procs) == 0 {
		_ = z.conn.Close()
	}
}

// read dispatches the zygote's replies until its socket closes, then fails
// what is still pending.
func (z *Zygote) read() {
	defer close(z.done)
	defer func() {
		// The socket's end is the zygote's: it has exited or is exiting.
		z.waitErr = z.cmd.Wait()
	}()
	buf := make([]byte, maxMsg)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	err := errors.New("sandbox helper exited")
	for {
		n, oobn, _, _, rerr := z.conn.ReadMsgUnix(buf, oob)
		if rerr != nil || n == 0 {
			break
		}
		var m zygoteMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		if m.Fatal != "" {
			err = errors.New(m.Fatal)
			break
		}
		if m.Pid != 0 && m.NS {
			m.Pid = credPid(oob[:oobn])
		}
		z.dispatch(m)
	}
	z.fail(err)
}

// credPid is the pid in the credentials of a message, 0 if none.
func credPid(oob []byte) int {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, cm := range cms {
		if c, err := unix.ParseUnixCredentials(&cm); err == nil {
			return int(c.Pid)
		}
	}
	return 0
}

func (z *Zygote) dispatch(m zygoteMsg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case m.Exited:
		if p := z.procs[m.ID]; p != nil {
			delete(z.procs, m.ID)
			p.end(syscall.WaitStatus(m.Status), nil)
			z.endIfIdle()
		}
	case m.Err != "" || m.Pid > 0:
		reply := z.starts[m.ID]
		if reply == nil {
			return
		}
		delete(z.starts, m.ID)
		if m.Err != "" || m.Pid <= 0 {
			reply <- startReply{err: fmt.Errorf("sandbox helper: %s", orDefault(m.Err, "no pid"))}
			z.endIfIdle()
			return
		}
		p := &zproc{pid: m.Pid, done: make(chan struct{})}
		z.procs[m.ID] = p
		reply <- startReply{proc: p}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fail ends the zygote's service: pending starts fail with err, and the
// commands still running are killed and reported killed. With namespaces
// the kernel has already killed them with the zygote; without, they are
// ordinary processes of the agent's user and go by their groups.
func (z *Zygote) fail(err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.err == nil {
		z.err = err
	}
	for id, reply := range z.starts {
		delete(z.starts, id)
		reply <- startReply{err: fmt.Errorf("sandbox helper: %w", z.err)}
	}
	for id, p := range z.procs {
		delete(z.procs, id)
		if !z.ns {
			// Orphaned, not yet reaped by whoever inherited them: their
			// pid still names them.
			_ = proctab.SignalGroup(p.pid, unix.SIGKILL)
		}
		p.end(syscall.WaitStatus(unix.SIGKILL), nil)
	}
}

// Close ends the zygote (and with namespaces every process left in them)
// and waits for it.
func (z *Zygote) Close() error {
	_ = z.conn.Close()
	// Killed rather than left to see EOF: a command can stop its zygote
	// (tgkill on the spawning thread, which shares its Landlock domain), and
	// a stopped zygote would never exit. Its end is the same either way:
	// with namespaces pid 1 takes them along, without them the commands
	// go by their groups (see fail).
	proctab.EndChild(z.cmd.Process, z.done, 0)
	err := z.waitErr
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// Its exit status says nothing the agent needs; a failure to set
		// up was reported as Fatal.
		err = nil
	}
	return err
}

// zproc is one command forked by a zygote.
type zproc struct {
	pid    int
	done   chan struct{}
	status syscall.WaitStatus
	err    error
}

var _ executor.Process = (*zproc)(nil)

func (p *zproc) end(ws syscall.WaitStatus, err error) {
	p.status, p.err = ws, err
	close(p.done)
}

func (p *zproc) Pid() int { return p.pid }

func (p *zproc) Wait() (syscall.WaitStatus, error) {
	<-p.done
	return p.status, p.err
}
