package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestFiles(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			outside := t.TempDir() // readable, not writable
			if err := os.WriteFile(filepath.Join(outside, "r"), []byte("readable\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p.Write = []string{filepath.Join(outside, "w")} // a missing extra write path is skipped
			cases := []struct {
				name, cmd, stdout string
				denied            bool
			}{
				{name: "write /etc", cmd: "echo x > /etc/dsh-sandbox-test", denied: true},
				{name: "write outside", cmd: "echo x > " + outside + "/f", denied: true},
				{name: "mkdir outside", cmd: "mkdir " + outside + "/d", denied: true},
				{name: "remove outside", cmd: "rm " + outside + "/r", denied: true},
				{name: "read outside", cmd: "cat " + outside + "/r", stdout: "readable\n"},
				{name: "read /etc", cmd: "head -c 5 /etc/passwd", stdout: "root:"},
				{name: "write cwd", cmd: "echo x > f && mkdir -p a/b && mv f a/b/g && cat a/b/g && pwd", stdout: "x\n" + p.Workdir + "\n"},
				{name: "write tmp", cmd: `test "$TMPDIR" = ` + p.TempDir + ` && echo y > "$TMPDIR/f" && mv "$TMPDIR/f" ./moved && cat moved && mktemp | grep -c "^$TMPDIR/"`, stdout: "y\n1\n"},
				{name: "devices", cmd: "echo x > /dev/null && head -c 3 /dev/zero | wc -c && head -c 1 /dev/urandom | wc -c && echo e >&2 && echo o > /dev/stdout", stdout: "3\n1\no\n"},
			}
			for _, c := range cases {
				r := run(ctx, t, l, c.cmd, p)
				if c.denied && !m.nons && strings.HasPrefix(c.cmd, "echo x > /etc/") {
					// The system's trees are read-only mounts there.
					if r.code != 1 || !strings.Contains(r.stderr, "Read-only file system") {
						t.Errorf("%s: want exit 1 with Read-only file system, got %+v", c.name, r)
					}
					continue
				}
				if c.denied {
					expectDenied(t, r, c.name)
					continue
				}
				expectOK(t, r, c.name)
				if r.stdout != c.stdout {
					t.Errorf("%s: stdout %q, want %q", c.name, r.stdout, c.stdout)
				}
			}
			if _, err := os.Stat("/etc/dsh-sandbox-test"); err == nil {
				t.Error("/etc/dsh-sandbox-test was written")
			}
			if !m.nons {
				// Nor any metadata in a read-only tree: a setuid bit, a mode,
				// a time (a tree of the test's standing in for /usr).
				sys := t.TempDir()
				prog := filepath.Join(sys, "prog")
				if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				q := p
				q.ReadOnly = []string{sys}
				for _, cmd := range []string{"chmod u+s " + prog, "chmod 777 " + prog, "touch -d 2001-01-01 " + prog, "chmod 777 " + sys} {
					if r := run(ctx, t, l, cmd, q); r.code == 0 {
						t.Errorf("%s: allowed", cmd)
					}
				}
				if fi, err := os.Stat(prog); err != nil || fi.Mode() != 0o755 || fi.ModTime().Year() == 2001 {
					t.Errorf("%s changed: %v %v", prog, fi.Mode(), err)
				}
				// A write tree inside a read-only one stays writable.
				q.Workdir = filepath.Join(sys, "proj")
				if err := os.Mkdir(q.Workdir, 0o755); err != nil {
					t.Fatal(err)
				}
				if r := run(ctx, t, l, "echo x > f && chmod +x f && cat f", q); r.code != 0 || r.stdout != "x\n" {
					t.Errorf("write tree inside a read-only tree: %+v", r)
				}
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			for _, code := range []int{0, 1, 42, 126, 143, 255} {
				r := run(ctx, t, l, "exit "+strconv.Itoa(code), p)
				if r.code != code || r.sig != 0 {
					t.Errorf("exit %d: got code %d sig %v, stderr %q", code, r.code, r.sig, r.stderr)
				}
			}
			// A death by signal that the command gives itself.
			r := run(ctx, t, l, "kill -USR1 $$", p)
			if r.sig != syscall.SIGUSR1 {
				t.Errorf("kill -USR1 $$: code %d sig %v, stderr %q", r.code, r.sig, r.stderr)
			}
			r = run(ctx, t, l, "echo out; echo err >&2; exit 3", p)
			if r.stdout != "out\n" || r.stderr != "err\n" || r.code != 3 {
				t.Errorf("streams: %+v", r)
			}
		})
	}
}

func TestSignals(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			cases := []struct {
				name, cmd string
				send      syscall.Signal
				code      int
				sig       syscall.Signal
			}{
				{name: "term", cmd: "echo ready; sleep 1000", send: syscall.SIGTERM, code: -1, sig: syscall.SIGTERM},
				{name: "term exec", cmd: "echo ready; exec sleep 1000", send: syscall.SIGTERM, code: -1, sig: syscall.SIGTERM},
				{name: "hup", cmd: "echo ready; sleep 1000", send: syscall.SIGHUP, code: -1, sig: syscall.SIGHUP},
				{name: "kill", cmd: "echo ready; sleep 1000", send: syscall.SIGKILL, code: -1, sig: syscall.SIGKILL},
				{name: "trap exits 0", cmd: "trap 'exit 0' TERM; sleep 1000 & echo ready; wait", send: syscall.SIGTERM, code: 0},
				{name: "trap once", cmd: "n=0; trap 'n=$((n+1))' TERM; sleep 1000 & echo ready; wait; echo traps=$n; exit 7", send: syscall.SIGTERM, code: 7},
			}
			for _, c := range cases {
				pr := start(ctx, t, l, c.cmd, p, true)
				if got := pr.readLine(t); got != "ready" {
					t.Fatalf("%s: handshake %q", c.name, got)
				}
				// As the executor does: the whole group.
				if err := syscall.Kill(-pr.pid, c.send); err != nil {
					t.Fatal(err)
				}
				r := pr.wait()
				if r.code != c.code || r.sig != c.sig {
					t.Errorf("%s: got code %d sig %v, want code %d sig %v; stderr %q", c.name, r.code, r.sig, c.code, c.sig, r.stderr)
				}
				if c.name == "trap once" {
					rest := make([]byte, 64)
					n, _ := pr.stdout.Read(rest)
					if got := string(rest[:n]); got != "traps=1\n" {
						t.Errorf("trap once: %q (the signal must reach bash exactly once)", got)
					}
				}
			}
		})
	}
}

// TestSignalAtStart: a group SIGTERM sent the moment the command starts —
// while the helpers are still starting, before any handshake — ends it by
// SIGTERM. (A signal that reached the namespace's init before its handlers
// were in place was ignored, as the kernel does for a pid 1, and the command
// ran on until the executor's SIGKILL.)
func TestSignalAtStart(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			// The window is somewhere in the helpers' first milliseconds:
			// the signal is sent after a growing delay, to land in it. The
			// delay injects timing; nothing waits on it.
			for i := range 30 {
				pr := start(ctx, t, l, "sleep 1000", p, true)
				time.Sleep(time.Duration(i) * 500 * time.Microsecond)
				if err := syscall.Kill(-pr.pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if r := pr.wait(); r.sig != syscall.SIGTERM {
					t.Fatalf("run %d: got code %d sig %v, want SIGTERM; stderr %q", i, r.code, r.sig, r.stderr)
				}
			}
		})
	}
}

// TestDaemonGone: with a PID namespace nothing the command started outlives
// the helper's group, not even a setsid daemon.
func TestDaemonGone(t *testing.T) {
	if a := probe(); !a.UserNS || !a.PIDNS {
		t.Skip("no PID namespace here")
	}
	for _, send := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(send.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, mode{name: "namespaces"})
			arg := fmt.Sprintf("1000.%d%d", os.Getpid(), send)
			pr := start(ctx, t, l, "setsid sleep "+arg+" </dev/null >/dev/null 2>&1 & echo ready; sleep 1000", policy(t), true)
			if got := pr.readLine(t); got != "ready" {
				t.Fatalf("handshake %q", got)
			}
			daemon := waitProcess(t, ctx, "sleep\x00"+arg+"\x00")
			if err := syscall.Kill(-pr.pid, send); err != nil {
				t.Fatal(err)
			}
			pr.wait()
			// The kernel ends the namespace's last process after the
			// helper's group is gone, which sends us no event.
			testutil.WaitGone(t, ctx, daemon)
		})
	}
}

// waitProcess waits until a process whose cmdline is exactly cmdline runs
// and returns its pid: the command's "ready" may come before the daemon it
// started has exec'd, and a process's start sends no event. It polls the
// way testutil's waits do, up to ctx's end.
func waitProcess(t *testing.T, ctx context.Context, cmdline string) int {
	t.Helper()
	tick := time.NewTicker(testutil.PollInterval)
	defer tick.Stop()
	for {
		if pid := findProcess(t, cmdline); pid != 0 {
			return pid
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no process %q: %v", cmdline, ctx.Err())
		case <-tick.C:
		}
	}
}

// findProcess returns the pid whose cmdline is exactly cmdline, or 0.
func findProcess(t *testing.T, cmdline string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == cmdline && !testutil.Gone(pid) {
			return pid
		}
	}
	return 0
}

func TestNetwork(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-acceptDone })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	connect := "exec 5<>/dev/tcp/127.0.0.1/" + port + " && echo connected"

	ctx := testutil.Context(t)
	if out, err := bare(ctx, connect); err != nil || out != "connected\n" {
		t.Fatalf("outside the sandbox: %q %v", out, err)
	}
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			l := launcher(t, m)
			p := policy(t)
			r := run(ctx, t, l, connect, p)
			if r.code == 0 || r.stdout != "" {
				t.Errorf("connect inside: %+v", r)
			}
			p.Network = true
			r = run(ctx, t, l, connect, p)
			expectOK(t, r, "connect with network allowed")
			if !m.nons {
				// The network namespace has a loopback of its own, down:
				// UDP cannot leave either.
				p.Network = false
				r = run(ctx, t, l, "echo x > /dev/udp/127.0.0.1/"+port, p)
				if r.code == 0 {
					t.Errorf("udp inside: %+v", r)
				}
			}
		})
	}
}

func TestDeny(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			state := t.TempDir() // the agent's: store, log, spills
			mk := func(path, body string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			mk(filepath.Join(state, "store", "session.jsonl"), "history\n")
			mk(filepath.Join(state, "agent.log"), "log\n")
			mk(filepath.Join(state, "spill", "other", "out"), "other's output\n")
			mk(filepath.Join(state, "spill", "own", "out"), "own output\n")
			mk(filepath.Join(state, "public"), "public\n")
			inCwd := filepath.Join(p.Workdir, ".state", "secret")
			mk(inCwd, "secret in cwd\n")
			p.Read = []string{"/", filepath.Join(state, "spill", "own")}
			// The store twice, as a link too (as /var/run/dbus is /run/dbus).
			if err := os.Symlink(filepath.Join(state, "store"), filepath.Join(state, "store-link")); err != nil {
				t.Fatal(err)
			}
			p.Deny = []string{filepath.Join(state, "store"), filepath.Join(state, "store-link"), filepath.Join(state, "agent.log"), filepath.Join(state, "spill"), filepath.Dir(inCwd)}
			// With namespaces a mount covers each denied path: what is inside
			// is gone, a denied file cannot be opened, nothing can be written.
			denied := expectDenied
			if !m.nons {
				denied = expectHidden
			}
			for _, path := range []string{"store/session.jsonl", "agent.log", "spill/other/out"} {
				denied(t, run(ctx, t, l, "cat "+filepath.Join(state, path), p), "read "+path)
			}
			denied(t, run(ctx, t, l, "echo x >> "+filepath.Join(state, "agent.log"), p), "append to the log")
			if !m.nons {
				// Not even the names beside the session's own spill files.
				r := run(ctx, t, l, "ls -a "+filepath.Join(state, "spill"), p)
				if expectOK(t, r, "list the spill dir"); r.stdout != ".\n..\nown\n" {
					t.Errorf("spill dir lists %q", r.stdout)
				}
			}
			// Inside a writable tree: with namespaces a mount hides the
			// denied path (an empty read-only directory nobody may enter,
			// root included: sandboxed commands have no capabilities);
			// Landlock alone withholds rights.
			for _, cmd := range []string{"cat " + inCwd, "echo x > " + inCwd} {
				expectDenied(t, run(ctx, t, l, cmd, p), cmd)
			}
			for path, want := range map[string]string{"public": "public\n", "spill/own/out": "own output\n"} {
				r := run(ctx, t, l, "cat "+filepath.Join(state, path), p)
				if expectOK(t, r, "read "+path); r.stdout != want {
					t.Errorf("read %s: %q", path, r.stdout)
				}
			}
			if err := os.Mkdir(filepath.Join(p.Workdir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := run(ctx, t, l, "echo y > sub/f && mkdir sub/d && echo z > sub/d/g && cat sub/f sub/d/g", p)
			if expectOK(t, r, "write in a subdirectory of a cwd with a denied dir"); r.stdout != "y\nz\n" {
				t.Errorf("cwd subdir writes: %q", r.stdout)
			}
			r = run(ctx, t, l, "echo x > new && cat new", p)
			if m.nons {
				// Landlock alone cannot let a file be created directly in a
				// directory on the way to a denied path (see fsRules).
				expectDenied(t, r, "write directly in a cwd with a denied dir, Landlock alone")
			} else if expectOK(t, r, "write directly in a cwd with a denied dir"); r.stdout != "x\n" {
				t.Errorf("cwd writes: %q", r.stdout)
			}
			if !m.nons {
				// Nor can the directories on the way to a denied path in the
				// cwd be moved or removed (the agent's files with them);
				// anything else in them can.
				deep := filepath.Join(p.Workdir, "a", "b", "denied")
				mk(filepath.Join(deep, "f"), "deep secret\n")
				q := p
				q.Deny = append(append([]string{}, p.Deny...), deep)
				for _, cmd := range []string{"mv a a2", "mv a/b a/b2", "rmdir a/b", "rm -rf a"} {
					if r := run(ctx, t, l, cmd, q); r.code == 0 {
						t.Errorf("%s: allowed", cmd)
					}
				}
				if r := run(ctx, t, l, "echo y > a/new && mkdir a/b/sub && mv a/new a/b/sub/ && cat a/b/sub/new", q); r.code != 0 || r.stdout != "y\n" {
					t.Errorf("writes beside a denied path in the cwd: %+v", r)
				}
				if b, err := os.ReadFile(filepath.Join(deep, "f")); err != nil || string(b) != "deep secret\n" {
					t.Errorf("the deep denied file: %q %v", b, err)
				}
			}
			if b, err := os.ReadFile(inCwd); err != nil || string(b) != "secret in cwd\n" {
				t.Errorf("denied file changed: %q %v", b, err)
			}
		})
	}
}

// TestPolicyChannel: the command cannot reach the descriptor the policy
// came through, and with namespaces cannot see the agent in /proc.
func TestPolicyChannel(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l := launcher(t, m)
			p := policy(t)
			r := run(ctx, t, l, `for fd in 3 4; do test -e /proc/$$/fd/$fd && readlink /proc/$$/fd/$fd; done; echo checked`, p)
			if expectOK(t, r, "list fds"); r.stdout != "checked\n" {
				t.Errorf("bash holds more than its own descriptors: %q", r.stdout)
			}
			for _, fd := range []string{"3", "4"} {
				r := run(ctx, t, l, "cat /dev/fd/"+fd, p)
				if r.code == 0 || !strings.Contains(r.stderr, "No such file") {
					t.Errorf("cat /dev/fd/%s: %+v", fd, r)
				}
			}
			// Nor look into the zygote that forked it, nor end it: without
			// namespaces signal scoping refuses any signal to it; with, it is
			// pid 1 and survives every one.
			r = run(ctx, t, l, `cat /proc/$PPID/environ >/dev/null 2>&1 && echo READ; echo checked`, p)
			if expectOK(t, r, "read the zygote"); r.stdout != "checked\n" {
				t.Errorf("the zygote is within reach: %q", r.stdout)
			}
			z, err := l.Zygote(p)
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			kill := `kill -0 $PPID 2>/dev/null && echo SIGNALLED; echo checked`
			if !m.nons {
				kill = `for s in TERM INT HUP QUIT ABRT SEGV BUS ILL FPE USR1 PIPE ALRM TSTP STOP KILL; do kill -s $s 1; done; echo checked`
			}
			r = startIn(ctx, t, z, kill, p, false).wait()
			if expectOK(t, r, "signal the zygote"); r.stdout != "checked\n" {
				t.Errorf("signals to the zygote: %q", r.stdout)
			}
			if r := startIn(ctx, t, z, "echo alive", p, false).wait(); r.code != 0 || r.stdout != "alive\n" {
				t.Errorf("the zygote after the signals: %+v", r)
			}
			// No capability, even when the agent runs as root: CAP_SYS_PTRACE
			// would reach the zygote, CAP_SYS_MODULE the kernel.
			r = run(ctx, t, l, `grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status | cut -f2 | sort -u`, p)
			if expectOK(t, r, "capabilities"); r.stdout != "0000000000000000\n" {
				t.Errorf("a confined command has capabilities: %q", r.stdout)
			}
			r = run(ctx, t, l, `env | grep -c DSH_SANDBOX_HELPER`, p)
			if r.stdout != "0\n" {
				t.Errorf("helper marker visible: %q", r.stdout)
			}
			if m.nons {
				return
			}
			agent := strconv.Itoa(os.Getpid())
			r = run(ctx, t, l, "test ! -e /proc/"+agent+" && cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /proc | grep -c '^[0-9]'", p)
			if expectOK(t, r, "agent hidden from /proc"); !strings.HasPrefix(r.stdout, "dsh-acp-sandbox \n") {
				t.Errorf("/proc inside: %q", r.stdout)
			}
		})
	}
}

func TestHelperError(t *testing.T) {
	for _, m := range modes(t) {
		l := launcher(t, m)
		p := policy(t)
		p.Shell = "/nonexistent/bash"
		z, err := l.Zygote(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = z.Start("true", nil, w, w)
		_ = w.Close()
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/bash") {
			t.Errorf("%s: missing shell: %v", m.name, err)
		}
		if err := z.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestRefusal(t *testing.T) {
	t.Setenv(sandbox.SimulateEnv, "nolandlock")
	a := sandbox.Probe(nil)
	if a.LandlockABI != 0 || a.Simulated == "" {
		t.Fatalf("simulated probe: %+v", a)
	}
	err := sandbox.Require(a)
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "Landlock") {
		t.Errorf("Require: %v", err)
	}
	if _, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: a}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("NewLauncher: %v", err)
	}

	t.Setenv(sandbox.SimulateEnv, "nouserns")
	a = sandbox.Probe(nil)
	if a.UserNS || a.PIDNS || a.NetNS {
		t.Errorf("nouserns probe: %+v", a)
	}
	if real := probe(); real.LandlockABI >= 1 {
		l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: a})
		if err != nil || l.Namespaces() {
			t.Errorf("Landlock-only launcher: %v %v", l, err)
		}
	}
}

func TestSessionDir(t *testing.T) {
	parent := t.TempDir()
	d, err := sandbox.NewSessionDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d.Path)
	if err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(d.Path) != parent {
		t.Fatalf("session dir %s: %v %v", d.Path, fi, err)
	}
	if len(modes(t)) > 0 {
		// What a command leaves there, read-only directories included.
		ctx := testutil.Context(t)
		p := policy(t)
		p.TempDir = d.Path
		expectOK(t, run(ctx, t, launcher(t, modes(t)[0]), `mkdir -p "$TMPDIR/ro/x" && touch "$TMPDIR/ro/x/f" && chmod 500 "$TMPDIR/ro" "$TMPDIR/ro/x"`, p), "fill temp dir")
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Remove: %v", err)
	}
	if err := d.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}
