package sandbox_test

import (
	"syscall"
	"testing"

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
