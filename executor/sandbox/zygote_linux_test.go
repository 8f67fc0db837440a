package sandbox_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// One zygote serves many commands at once, each with its own output and
// exit code.
func TestZygoteConcurrent(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			z, err := l.Zygote(p)
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			var wg sync.WaitGroup
			for i := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := startIn(ctx, t, z, fmt.Sprintf("echo out-%d; echo err-%d >&2; exit %d", i, i, i%7), p, false).wait()
					if r.code != i%7 || r.stdout != fmt.Sprintf("out-%d\n", i) || r.stderr != fmt.Sprintf("err-%d\n", i) {
						t.Errorf("command %d: %+v", i, r)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// ppid is pid's parent as this process's namespace numbers it.
func ppid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A zygote that dies (the OOM killer) reports its running commands killed,
// and the Confiner starts the session's next command in a new one.
func TestZygoteDies(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			c := newConfiner(t, l, sandbox.ConfinerOptions{})
			run := func(command string) (executor.Process, *os.File) {
				return confined(t, c, executor.Spec{Command: command, Workdir: t.TempDir(), Owner: "s"})
			}
			pr, out := run("echo ready; sleep 1000")
			line := make([]byte, 6)
			if _, err := out.Read(line); err != nil || string(line) != "ready\n" {
				t.Fatalf("handshake %q %v", line, err)
			}
			zygote := ppid(t, pr.Pid())
			if err := syscall.Kill(zygote, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			ws, err := pr.Wait()
			if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("after the zygote's death: %v %v", ws, err)
			}
			testutil.WaitGone(t, ctx, pr.Pid())
			pr2, out2 := run("echo again; exec sleep 1000")
			b := make([]byte, 6)
			if _, err := out2.Read(b); err != nil || string(b) != "again\n" {
				t.Fatalf("next command: %q %v", b, err)
			}
			if got := ppid(t, pr2.Pid()); got == zygote {
				t.Errorf("the next command runs in the dead zygote")
			}
			_ = syscall.Kill(-pr2.Pid(), syscall.SIGTERM)
			if ws, err := pr2.Wait(); err != nil || ws.Signal() != syscall.SIGTERM {
				t.Errorf("next command's end: %v %v", ws, err)
			}
		})
	}
}

// With namespaces, a daemon a command left behind is gone once the
// command's shell has ended by itself, as when it is killed.
func TestDaemonGoneAtExit(t *testing.T) {
	if a := probe(); !a.UserNS || !a.PIDNS {
		t.Skip("no PID namespace here")
	}
	ctx := testutil.Context(t)
	l := launcher(t, mode{name: "namespaces"})
	arg := fmt.Sprintf("1000.%d9", os.Getpid())
	// The daemon says it is up through a file in the cwd; the command waits
	// for it (bounded by the test's context, which kills the group).
	cmd := "setsid bash -c 'echo up > up; exec sleep " + arg + "' </dev/null >/dev/null 2>&1 & until test -s up; do :; done; echo started"
	r := run(ctx, t, l, cmd, policy(t))
	if expectOK(t, r, "start a daemon"); r.stdout != "started\n" {
		t.Fatalf("%+v", r)
	}
	tick := time.NewTicker(testutil.PollInterval)
	defer tick.Stop()
	for findProcess(t, "sleep\x00"+arg+"\x00") != 0 || findProcess(t, "bash\x00-c\x00echo up > up; exec sleep "+arg+"\x00") != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the daemon outlived its command")
		case <-tick.C:
		}
	}
}

// An entry made, after the session's first command, beside a denied path
// is readable by its next command: the rules of a zygote that name such a
// directory's entries one by one are remade (Landlock alone), or there is
// no such directory (namespaces cover each denied path with a mount).
func TestNewEntriesReadable(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			l := launcher(t, m)
			parent := t.TempDir()
			if err := os.Mkdir(parent+"/denied", 0o700); err != nil {
				t.Fatal(err)
			}
			c := newConfiner(t, l, sandbox.ConfinerOptions{Deny: []string{parent + "/denied"}})
			work := t.TempDir()
			run := func(command string) (string, syscall.WaitStatus) {
				return runConfined(t, c, executor.Spec{Command: command, Workdir: work, Owner: "s"})
			}
			if out, ws := run("cat " + parent + "/denied/x 2>&1; ls " + parent); ws.ExitStatus() != 0 || strings.Contains(out, "new") {
				t.Fatalf("first command: %q %v", out, ws)
			}
			if err := os.WriteFile(parent+"/new", []byte("fresh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, ws := run("cat " + parent + "/new"); ws.ExitStatus() != 0 || out != "fresh\n" {
				t.Errorf("an entry made after the first command: %q %v", out, ws)
			}
			if out, ws := run("cat " + parent + "/denied/x"); ws.ExitStatus() == 0 {
				t.Errorf("the denied path after the rules were remade: %q", out)
			}
		})
	}
}

// With namespaces and no network, the usual local services' sockets are
// covered: a pathname unix socket is a file, which neither the network
// namespace nor Landlock before ABI 9 keeps a command from connecting to.
func TestIPCHidden(t *testing.T) {
	if a := probe(); !a.UserNS || !a.PIDNS {
		t.Skip("no namespaces here")
	}
	l := launcher(t, mode{name: "namespaces"})
	dir := t.TempDir()
	sock := dir + "/bus"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer func() { _ = ln.Close(); <-done }()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dial := fmt.Sprintf("%s=dial %q -test.run=^$ %q", testutil.ChildEnv, self, sock)
	for _, network := range []bool{false, true} {
		c := newConfiner(t, l, sandbox.ConfinerOptions{Network: network, IPC: []string{dir}})
		out, ws := runConfined(t, c, executor.Spec{Command: dial, Workdir: t.TempDir(), Owner: "s"})
		if got := ws.ExitStatus() == 0; got != network {
			t.Errorf("network %v: connected %v, want %v (%s)", network, got, network, out)
		}
	}
}

// Without namespaces a command cannot stop its zygote by a thread of its
// own domain: each command is forked from a thread confined for it alone,
// gone once the fork is done.
func TestZygoteNotStoppable(t *testing.T) {
	if a := probe(); a.LandlockABI < 6 {
		t.Skip("no signal scoping before Landlock ABI 6")
	}
	ctx := testutil.Context(t)
	l := launcher(t, mode{name: "landlock", nons: true})
	p := policy(t)
	z, err := l.Zygote(p)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("%s=tgkill %q -test.run=^$ $PPID", testutil.ChildEnv, self)
	for range 2 {
		r := startIn(ctx, t, z, cmd, p, false).wait()
		if r.code != 0 || !strings.HasPrefix(r.stdout, "stopped 0 of ") {
			t.Fatalf("tgkill the zygote's threads: %+v", r)
		}
	}
	if r := startIn(ctx, t, z, "echo alive", p, false).wait(); r.stdout != "alive\n" {
		t.Errorf("the zygote after: %+v", r)
	}
}

// A workdir removed and made again between two commands is the new one
// for the next command (its rules named the old one by inode).
func TestWorkdirRecreated(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			l := launcher(t, m)
			c := newConfiner(t, l, sandbox.ConfinerOptions{})
			work := filepath.Join(t.TempDir(), "w")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			run := func(command string) syscall.WaitStatus {
				_, ws := runConfined(t, c, executor.Spec{Command: command, Workdir: work, Owner: "s"})
				return ws
			}
			if ws := run("touch a"); ws.ExitStatus() != 0 {
				t.Fatalf("first write: %v", ws)
			}
			if err := os.RemoveAll(work); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			if ws := run("touch b"); ws.ExitStatus() != 0 {
				t.Errorf("write in the workdir made again: %v", ws)
			}
		})
	}
}

// A session whose commands use many workdirs keeps at most a few zygotes:
// the least recently used go once idle. (Not parallel: it counts this
// process's zygotes.)
func TestZygotesPerSession(t *testing.T) {
	ctx := testutil.Context(t)
	m := modes(t)[0]
	l := launcher(t, m)
	c := newConfiner(t, l, sandbox.ConfinerOptions{})
	for range 7 {
		runConfined(t, c, executor.Spec{Command: "true", Workdir: t.TempDir(), Owner: "s"})
	}
	zygotes := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || testutil.Gone(pid) {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || string(b) != "dsh-acp-sandbox\x00" {
				continue
			}
			st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue // gone meanwhile
			}
			fields := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+2:]))
			if fields[1] == strconv.Itoa(os.Getpid()) {
				n++
			}
		}
		return n
	}
	tick := time.NewTicker(testutil.PollInterval)
	defer tick.Stop()
	for zygotes() > 4 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d zygotes for one session", zygotes())
		case <-tick.C:
		}
	}
}

// The registry keeps each session's zygotes apart: one session using many
// workdirs retires its own least recently used, never another's, and
// releasing a session ends its zygotes, retired ones included, and leaves
// the other's serving.
func TestZygoteRegistryPerOwner(t *testing.T) {
	m := modes(t)[0]
	l := launcher(t, m)
	c := newConfiner(t, l, sandbox.ConfinerOptions{})
	keep := t.TempDir()
	runConfined(t, c, executor.Spec{Command: "true", Workdir: keep, Owner: "b"})
	for range 6 {
		runConfined(t, c, executor.Spec{Command: "true", Workdir: t.TempDir(), Owner: "a"})
	}
	if live, retired := sandbox.Zygotes(c, "a"); live != 4 || live+retired > 6 {
		t.Errorf("session a: %d live, %d retired zygotes; want 4 live", live, retired)
	}
	if live, retired := sandbox.Zygotes(c, "b"); live != 1 || retired != 0 {
		t.Errorf("session b: %d live, %d retired zygotes; want 1 live", live, retired)
	}
	c.Release("a")
	if live, retired := sandbox.Zygotes(c, "a"); live+retired != 0 {
		t.Errorf("released session a still has %d live, %d retired zygotes", live, retired)
	}
	if out, ws := runConfined(t, c, executor.Spec{Command: "echo b", Workdir: keep, Owner: "b"}); ws.ExitStatus() != 0 || out != "b\n" {
		t.Errorf("session b after a's release: %q %v", out, ws)
	}
	// (Its rules may have gone stale meanwhile, a's new workdirs being
	// entries of a directory they descend: then it serves from a new one.)
	if live, _ := sandbox.Zygotes(c, "b"); live != 1 {
		t.Errorf("session b after a's release: %d live zygotes; want its one", live)
	}
}

// A start whose zygote left the map between the start's look-up and its
// replacement (Release, or a retirement as the least recently used, by a
// concurrent command) gets a new zygote, not none.
func TestReplaceReleasedZygote(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			c := newConfiner(t, l, sandbox.ConfinerOptions{})
			p := policy(t)
			dn, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer dn.Close()
			pr, err := c.Start(executor.Confinement{Shell: bashPath(), Spec: executor.Spec{Command: "true", Workdir: p.Workdir, Owner: "s"}, Stdout: dn, Stderr: dn})
			if err != nil {
				t.Fatal(err)
			}
			if ws, err := pr.Wait(); err != nil || ws.ExitStatus() != 0 {
				t.Fatalf("first command: %v %v", ws, err)
			}
			z, err := sandbox.ReplaceReleased(c, "s")
			if err != nil || z == nil {
				t.Fatalf("replacement: %v %v", z, err)
			}
			if r := startIn(ctx, t, z, "echo again", p, false).wait(); r.code != 0 || r.stdout != "again\n" {
				t.Errorf("in the replacement: %+v", r)
			}
		})
	}
}

// A workdir outside the session's directory is where the command starts,
// not where it may write: the tool's workdir argument is the model's.
func TestWorkdirOutsideRoot(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			l := launcher(t, m)
			c := newConfiner(t, l, sandbox.ConfinerOptions{})
			root, elsewhere := t.TempDir(), t.TempDir()
			run := func(command string) (string, int) {
				out, ws := runConfined(t, c, executor.Spec{Command: command, Workdir: elsewhere, Root: root, Owner: "s"})
				return out, ws.ExitStatus()
			}
			if out, code := run("pwd"); code != 0 || out != elsewhere+"\n" {
				t.Errorf("pwd: %q %d", out, code)
			}
			if out, code := run("echo x > f"); code != 1 || !strings.Contains(out, "Permission denied") {
				t.Errorf("a write in the workdir outside the session's directory: %q %d", out, code)
			}
			if out, code := run("echo y > " + root + "/g && cat " + root + "/g"); code != 0 || out != "y\n" {
				t.Errorf("a write in the session's directory: %q %d", out, code)
			}
		})
	}
}
