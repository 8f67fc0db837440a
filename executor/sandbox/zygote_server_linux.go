package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// zygoteServer is the zygote's side: it forks the commands and reaps them.
type zygoteServer struct {
	conn    *net.UnixConn
	ns      bool
	devnull *os.File

	// mu orders a fork, its registration and its "started" before the
	// reaper can report its end.
	mu   sync.Mutex
	cmds map[int]uint64 // pid (in the zygote's namespace) → command id
}

// zygoteRequest is one start request and its descriptors.
type zygoteRequest struct {
	id            uint64
	out, err, mem *os.File
}

func (r zygoteRequest) close() { closeAll(r.out, r.err, r.mem) }

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// caught are the signals whose default action (or the Go runtime's)
// would end or stop the zygote; it catches them (a handler, not SIG_IGN,
// which bash would inherit) and drops them. SIGCHLD is the reaper's.
var caught = func() []os.Signal {
	var out []os.Signal
	for s := unix.Signal(1); s <= 31; s++ {
		switch s {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD:
			continue
		}
		out = append(out, s)
	}
	return out
}()

func zygoteMain() int {
	// The main thread, the one /proc/PID and kill(PID) name, stays
	// unconfined: only the spawner's thread is in the commands' Landlock
	// domain, so a command can neither signal the zygote nor open its
	// /proc entries (Landlock allows either only within its domain).
	runtime.LockOSThread()
	// Nor ptrace any of its threads, the spawner's included: without
	// CAP_SYS_PTRACE (see dropBounding) a non-dumpable process cannot be
	// attached to or read through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return HelperFailed
	}
	quiet := make(chan os.Signal, 1)
	signal.Notify(quiet, caught...)
	go func() {
		for range quiet {
		}
	}()
	// Neither of the agent's descriptors may reach a command: the policy
	// pipe is read and closed below, the socket is close-on-exec.
	syscall.CloseOnExec(sockFD)
	sock := os.NewFile(sockFD, "zygote")
	fc, err := net.FileConn(sock)
	_ = sock.Close()
	if err != nil {
		return HelperFailed
	}
	z := &zygoteServer{conn: fc.(*net.UnixConn), cmds: map[int]uint64{}}
	w, err := readPolicy(policyFD)
	if err != nil {
		return z.fatal(err)
	}
	z.ns = w.Namespaces
	var hidden map[string]bool
	if w.Namespaces {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return z.fatal(fmt.Errorf("private mounts: %w", err))
		}
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return z.fatal(fmt.Errorf("mount /proc: %w", err))
		}
		if hidden, err = hideDenied(w.Policy); err != nil {
			return z.fatal(err)
		}
		if err := readOnlyMounts(w.Policy); err != nil {
			return z.fatal(err)
		}
	}
	if z.devnull, err = os.Open(os.DevNull); err != nil {
		return z.fatal(err)
	}
	// Before the first fork, so that no child's end can go unnoticed.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, unix.SIGCHLD)
	reqs := make(chan zygoteRequest)
	ready := make(chan error)
	go z.spawner(w, hidden, reqs, ready)
	if err := <-ready; err != nil {
		return z.fatal(err)
	}
	go z.reap(sigc)
	z.serve(reqs)
	return 0
}

// fatal tells the agent why the zygote cannot serve, and returns its exit code.
func (z *zygoteServer) fatal(err error) int {
	z.send(zygoteMsg{Fatal: err.Error()}, nil)
	return HelperFailed
}

func (z *zygoteServer) send(m zygoteMsg, oob []byte) {
	b, _ := json.Marshal(m)
	_, _, _ = z.conn.WriteMsgUnix(b, oob, nil)
}

// serve reads start requests until the agent's end closes: the agent is
// done with this session, or gone.
func (z *zygoteServer) serve(reqs chan<- zygoteRequest) {
	buf := make([]byte, maxMsg)
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := z.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		var m zygoteMsg
		jerr := json.Unmarshal(buf[:n], &m)
		files := rights(oob[:oobn])
		if jerr != nil || !m.Start || len(files) != 3 {
			closeAll(files...)
			z.send(zygoteMsg{ID: m.ID, Err: "malformed start request"}, nil)
			continue
		}
		reqs <- zygoteRequest{id: m.ID, out: files[0], err: files[1], mem: files[2]}
	}
}

// rights are the descriptors passed in oob (received close-on-exec).
func rights(oob []byte) []*os.File {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []*os.File
	for _, cm := range cms {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			out = append(out, os.NewFile(uintptr(fd), "passed"))
		}
	}
	return out
}

// spawner forks the commands from confined threads: Landlock,
// no_new_privs and the capability sets are per thread, and a child
// inherits the forking thread's.
//
// With namespaces one thread is confined once and forks every command, so
// a session's commands share one domain. Without, each command is forked
// from a fresh thread confined for it alone and ended right after the
// fork: signal scoping is what keeps a command from signalling processes
// outside the sandbox there, and it would let a command stop or kill a
// forking thread of its own domain, and with it the zygote. (With
// namespaces the kernel ignores SIGKILL and SIGSTOP sent to pid 1 from
// inside, and the zygote catches every other signal.)
func (z *zygoteServer) spawner(w wirePolicy, hidden map[string]bool, reqs <-chan zygoteRequest, ready chan<- error) {
	rs, err := newRuleset(w, hidden)
	if err != nil {
		ready <- err
		return
	}
	if !w.Namespaces {
		ready <- nil
		// The next command's thread is made and confined while the
		// zygote waits for it, not once it has come.
		next := z.confinedThread(w, rs)
		for r := range reqs {
			next <- r
			next = z.confinedThread(w, rs)
		}
		close(next)
		return
	}
	// Never unlocked: the thread is confined for good, and must not run
	// anything else.
	runtime.LockOSThread()
	if err := rs.restrict(); err != nil {
		ready <- err
		return
	}
	_ = unix.Close(rs.fd)
	ready <- nil
	for r := range reqs {
		z.spawn(w, r)
	}
}

// confinedThread starts a goroutine on a thread of its own, confined to
// rs, that forks the one command sent on the channel it returns and then
// ends, and the thread with it.
func (z *zygoteServer) confinedThread(w wirePolicy, rs ruleset) chan<- zygoteRequest {
	ch := make(chan zygoteRequest, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine.
		runtime.LockOSThread()
		err := rs.restrict()
		r, ok := <-ch
		if !ok {
			return
		}
		if err != nil {
			r.close()
			z.send(zygoteMsg{ID: r.id, Err: err.Error()}, nil)
			return
		}
		z.spawn(w, r)
	}()
	return ch
}

// maxPayload bounds a command's memfd: its text is one argument of
// execve and its environment the rest, which together cannot pass ARG_MAX.
const maxPayload = 8 << 20

func (z *zygoteServer) spawn(w wirePolicy, r zygoteRequest) {
	defer r.close()
	var pl executor.StartRequest
	dec := json.NewDecoder(io.NewSectionReader(r.mem, 0, maxPayload))
	if err := dec.Decode(&pl); err != nil {
		z.send(zygoteMsg{ID: r.id, Err: "read command: " + err.Error()}, nil)
		return
	}
	env := append(pl.Env, cmdMarkerEnv+"="+strconv.FormatUint(r.id, 10))
	dir := pl.Dir
	if dir == "" {
		dir = w.Workdir
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	pid, err := syscall.ForkExec(w.Shell, []string{"bash", "-c", pl.Command}, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{z.devnull.Fd(), r.out.Fd(), r.err.Fd()},
		// Its own session and group, as an unconfined command: the
		// executor signals the group and walks the session.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		z.send(zygoteMsg{ID: r.id, Err: fmt.Sprintf("start %s: %v", w.Shell, err)}, nil)
		return
	}
	z.cmds[pid] = r.id
	if !z.ns {
		z.send(zygoteMsg{ID: r.id, Pid: pid}, nil)
		return
	}
	// The pid is the namespace's; named in the credentials, it reaches the
	// agent as the agent's namespace numbers it. The reaper cannot reap it
	// before this is sent (mu), so the pid still names this process.
	cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(pid), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	z.send(zygoteMsg{ID: r.id, Pid: pid, NS: true}, cred)
}

// reap reaps every child (as pid 1, orphans of the namespace too) at each
// SIGCHLD and reports the end of the commands' shells.
func (z *zygoteServer) reap(sigc <-chan os.Signal) {
	for range sigc {
		var ended []uint64
		z.mu.Lock()
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			id, ok := z.cmds[pid]
			if !ok {
				continue
			}
			delete(z.cmds, pid)
			z.send(zygoteMsg{ID: id, Exited: true, Status: uint32(ws)}, nil)
			ended = append(ended, id)
		}
		z.mu.Unlock()
		if z.ns {
			for _, id := range ended {
				// What is left of the ended command (a setsid daemon, a
				// `nohup … &`): this namespace's /proc shows only it, so the
				// walk is short.
				proctab.KillMarked(cmdMarkerEnv + "=" + strconv.FormatUint(id, 10))
			}
		}
	}
}
