package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helper's process tree, with namespaces:
//
//	agent ─ outer (the process the executor starts, waits for and signals)
//	          └ init: pid 1 of new user, PID, mount (and network) namespaces
//	              └ bash -c CMD (its own session and process group)
//
// Without namespaces, outer applies Landlock and becomes bash itself.
//
// outer is not pid 1, so it can die by the signal that killed bash, which
// init (pid 1 ignores every signal it has no handler for) could not. Each
// hop forwards a terminating signal exactly once: the agent signals outer's
// group and session (outer alone: init has its own session), outer signals init, init
// signals bash's group. A SIGKILL of outer reaches init as its parent-death
// signal; when init exits, the kernel kills everything left in the PID
// namespace, setsid daemons included.

// forwarded are the signals passed down to bash; each can end a process.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// Descriptors of the init stage: its policy and where it reports bash's end.
const (
	policyFD = 3
	statusFD = 4
)

// HelperMain runs the sandbox helper and exits when this process was started
// as one (by a Launcher's Command or by Probe); otherwise it returns at once.
// Call it first in main, before flags or stdin are touched, with the
// process's standard files: in a helper they are the command's own (stdin
// /dev/null, the executor's capture pipes), which it hands down to bash.
func HelperMain(stdio Stdio) {
	stage, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	h := helper{stdio}
	// exit_group at once rather than os.Exit: a race-enabled build (the
	// tests') would otherwise sleep a second in the race runtime's exit
	// hook, in each of the two helper processes. Nothing of the helper's
	// is buffered.
	syscall.Exit(h.runStage(stage))
}

// helper is one helper process and the command's standard files.
type helper struct{ stdio Stdio }

func (h helper) runStage(stage string) int {
	switch stage {
	case stageOuter:
		return h.outer()
	case stageInit:
		return h.initStage()
	case stageProbe:
		return probeStage()
	default:
		return h.fail("unknown helper stage %q", stage)
	}
}

// fail reports the helper's own error and returns its exit code.
func (h helper) fail(format string, args ...any) int {
	fmt.Fprintf(h.stdio.Err, HelperPrefix+format+"\n", args...)
	return HelperFailed
}

// bashEnv is the helper's environment without its marker.
func bashEnv() []string {
	env := os.Environ()
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func (h helper) outer() int {
	w, err := readPolicy(policyFD)
	if err != nil {
		return h.fail("%v", err)
	}
	if !w.Namespaces {
		// Landlock alone: become bash, whose wait status is then the
		// command's own with nothing to reproduce.
		runtime.LockOSThread()
		if err := restrictThread(w, nil); err != nil {
			return h.fail("%v", err)
		}
		err := syscall.Exec(w.Shell, []string{"bash", "-c", w.Command}, bashEnv())
		return h.fail("exec %s: %v", w.Shell, err)
	}
	return h.supervise(w)
}

// supervise starts init in new namespaces, forwards signals to it and
// reproduces bash's end as its own.
func (h helper) supervise(w wirePolicy) int {
	pr, err := policyPipe(w)
	if err != nil {
		return h.fail("%v", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return h.fail("status pipe: %v", err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if !w.Network && w.NetNS {
		flags |= unix.CLONE_NEWNET
	}
	attr := &syscall.SysProcAttr{
		Cloneflags: flags,
		// The same ids inside: files and `id` look as they do outside.
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		// A session of its own, not only a group: the executor, ending a
		// command, signals every group of the command's session, and init
		// there would get each signal twice (from it and from outer) and
		// pass both to bash (a TERM trap would run twice). A SIGKILL of
		// outer still reaches init as its parent-death signal.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if uid != 0 {
		// A non-root init loses its namespace capabilities at exec unless
		// they are ambient; it needs CAP_SYS_ADMIN to mount /proc and
		// clears it before bash starts.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{helperArg0 + "-init"},
		Env:         append(bashEnv(), helperEnv+"="+stageInit),
		Dir:         w.Workdir,
		Stdin:       h.stdio.In,
		Stdout:      h.stdio.Out,
		Stderr:      h.stdio.Err,
		ExtraFiles:  []*os.File{pr, statusW},
		SysProcAttr: attr,
	}
	sigs := make(chan os.Signal, len(forwarded))
	signal.Notify(sigs, forwarded...)
	// The parent-death signal fires when the thread that started init ends:
	// keep this one for good.
	runtime.LockOSThread()
	err = cmd.Start()
	_ = pr.Close()
	_ = statusW.Close()
	if err != nil {
		return h.fail("start namespaces: %v", err)
	}
	// Signals that come before init is ready wait in sigs (see readyLine).
	st := bufio.NewReader(statusR)
	_, _ = st.ReadString('\n')
	var last atomic.Int32 // the last signal forwarded
	go func() {
		for s := range sigs {
			last.Store(int32(s.(syscall.Signal)))
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	b, _ := io.ReadAll(st)
	code, sig, ok := parseStatus(string(b))
	if !ok {
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			sig = ws.Signal()
		case last.Load() != 0 && ws.ExitStatus() != HelperFailed:
			// Init ended before bash did (or before it could catch the
			// signal): the command was killed by what we forwarded.
			sig = syscall.Signal(last.Load())
		default:
			return ws.ExitStatus()
		}
	}
	if sig != 0 {
		signal.Reset()
		return dieBy(sig)
	}
	return code
}

// initStage is pid 1 of the command's namespaces: it mounts a /proc that
// shows only them, confines itself, starts bash and reaps until bash ends.
func (h helper) initStage() int {
	sigs := make(chan os.Signal, len(forwarded))
	signal.Notify(sigs, forwarded...)
	w, err := readPolicy(policyFD)
	if err != nil {
		return h.fail("%v", err)
	}
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	// Our handlers are in place: outer may forward signals now. One that
	// came before would have hit a pid 1 without a handler, which the
	// kernel ignores, and the command would run on until SIGKILL.
	if _, err := io.WriteString(status, readyLine); err != nil {
		return h.fail("status: %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return h.fail("private mounts: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return h.fail("mount /proc: %v", err)
	}
	hidden, err := hideDenied(w.Policy)
	if err != nil {
		return h.fail("%v", err)
	}
	// Landlock, no_new_privs and ambient capabilities are per thread: bash
	// starts from this one, confined and without capabilities.
	runtime.LockOSThread()
	if err := restrictThread(w, hidden); err != nil {
		return h.fail("%v", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return h.fail("clear capabilities: %v", err)
	}
	proc, err := os.StartProcess(w.Shell, []string{"bash", "-c", w.Command}, &os.ProcAttr{
		Dir:   w.Workdir,
		Env:   bashEnv(),
		Files: []*os.File{h.stdio.In, h.stdio.Out, h.stdio.Err},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return h.fail("start %s: %v", w.Shell, err)
	}
	bash := proc.Pid
	go func() {
		for s := range sigs {
			_ = unix.Kill(-bash, s.(syscall.Signal))
		}
	}()
	// pid 1 inherits every orphan of the namespace: reap them all, and stop
	// at bash's end (exiting then kills whatever is left).
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return h.fail("wait: %v", err)
		}
		if pid != bash {
			continue
		}
		if ws.Signaled() {
			fmt.Fprintf(status, "signal %d", int(ws.Signal()))
		} else {
			fmt.Fprintf(status, "exit %d", ws.ExitStatus())
		}
		return 0
	}
}

// readyLine is init's first line on the status pipe: its signal handlers
// are installed.
const readyLine = "ready\n"

// parseStatus reads init's report on bash.
func parseStatus(s string) (code int, sig syscall.Signal, ok bool) {
	kind, num, found := strings.Cut(s, " ")
	n, err := strconv.Atoi(num)
	if !found || err != nil {
		return 0, 0, false
	}
	switch kind {
	case "exit":
		return n, 0, true
	case "signal":
		return 0, syscall.Signal(n), true
	}
	return 0, 0, false
}

// dieBy ends this process by sig, restoring its default action (the Go
// runtime would otherwise ignore or catch some signals) on a thread that
// has it unblocked. Only a signal whose default action does not kill can
// return: then 128+sig, bash's convention.
func dieBy(sig syscall.Signal) int {
	runtime.LockOSThread()
	// The command's core, if it made one, was its own: do not add ours.
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var dfl [8]uint64 // struct sigaction with SIG_DFL, no flags, empty mask
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	return 128 + int(sig)
}

// probeStage checks, in the namespaces Probe created, that /proc can be
// mounted for them.
func probeStage() int {
	if os.Getpid() != 1 {
		return 0 // a user namespace alone: starting was the test
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 4
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return 5
	}
	return 0
}
