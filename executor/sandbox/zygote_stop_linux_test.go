package sandbox_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// A stopped zygote (a command can stop it: tgkill on its spawning thread,
// which shares the commands' Landlock domain) does not hang its Close:
// session/close and the agent's end must not wait on it forever.
func TestZygoteCloseStopped(t *testing.T) {
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
			pr := startIn(ctx, t, z, "echo ready; exec sleep 1000", p, true)
			pr.readLine(t)
			zygote := ppid(t, pr.pid)
			if err := syscall.Kill(zygote, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			go func() { closed <- z.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("close: %v", err)
				}
			case <-ctx.Done():
				_ = syscall.Kill(zygote, syscall.SIGKILL)
				<-closed
				t.Fatal("Close hangs on a stopped zygote")
			}
			if ws := pr.wait(); ws.sig != syscall.SIGKILL {
				t.Errorf("the running command after Close: %+v", ws)
			}
		})
	}
}

// A start that its zygote does not answer (stopped from outside) gives up
// on it after the start timeout instead of hanging the session: the
// zygote is ended and the command runs in a new one.
func TestZygoteStartTimeout(t *testing.T) {
	defer sandbox.SetStartTimeout(200 * time.Millisecond)()
	ctx := testutil.Context(t)
	m := modes(t)[0]
	l := launcher(t, m)
	c := newConfiner(t, l, sandbox.ConfinerOptions{})
	work := t.TempDir()
	start := func(command string) (executor.Process, error) {
		w, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return c.Start(executor.Confinement{Shell: bashPath(), Spec: executor.Spec{Command: command, Workdir: work, Owner: "s"}, Stdout: w, Stderr: w})
	}
	pr, err := start("exec sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	zygote := ppid(t, pr.Pid())
	if err := syscall.Kill(zygote, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The start gives up on the stopped zygote, ends it, and runs the
	// command in a new one.
	pr2, err := start("exec sleep 1000")
	if err != nil {
		t.Fatalf("start after a stopped zygote: %v", err)
	}
	if got := ppid(t, pr2.Pid()); got == zygote {
		t.Error("the command ran in the stopped zygote")
	}
	if !testutil.Gone(zygote) {
		// The start found the zygote's rules stale (on a busy machine
		// another process changed a directory they descend, /tmp) and
		// retired it without asking it anything: a retired zygote ends
		// with its last command, which a stopped one keeps until its
		// Close. The timeout was not reached this time.
		t.Log("the stopped zygote was retired as stale before its start could time out")
		_ = syscall.Kill(zygote, syscall.SIGKILL)
	}
	if ws, err := pr.Wait(); err != nil || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the stopped zygote's command: %v %v", ws, err)
	}
	_ = syscall.Kill(-pr.Pid(), syscall.SIGKILL)
	_ = syscall.Kill(-pr2.Pid(), syscall.SIGKILL)
	if _, err := pr2.Wait(); err != nil {
		t.Error(err)
	}
	testutil.WaitGone(t, ctx, zygote)
}

// A stopped zygote, which never sees its socket's EOF, still ends with the
// agent when the agent is SIGKILLed (its parent-death signal).
func TestStoppedZygoteEndsWithAgent(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			cmd := testutil.Child(t, ctx, "stopped-zygote", t.TempDir(), m.name)
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var zygote, command int
			_, scanErr := fmt.Fscan(out, &zygote, &command)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if scanErr != nil {
				t.Fatalf("the agent's zygote: %v", scanErr)
			}
			// Without namespaces the command outlives its zygote (the
			// watchdog is what ends it in the real agent).
			defer func() { _ = syscall.Kill(-command, syscall.SIGKILL) }()
			t.Cleanup(func() {
				if t.Failed() {
					_ = syscall.Kill(zygote, syscall.SIGKILL)
				}
			})
			testutil.WaitGone(t, ctx, zygote)
		})
	}
}
