package watchdog_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"github.com/dsh-acp/dsh-acp/executor/watchdog"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m, nil) }

// On EOF, Serve ends a registered session — its leader's group and a group
// that left it (job control) — and a marked process that left the session
// altogether (setsid), escalating to SIGKILL for what ignores SIGTERM.
func TestServeEndsEverythingOnEOF(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	marker := fmt.Sprintf("WATCHDOG_TEST_%d=1", os.Getpid())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", `trap '' TERM; set -m; sleep 1000 & setsid sleep 1000 & echo ok; wait`)
	cmd.Env = append(os.Environ(), marker)
	cmd.Stdout = readyW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	buf := make([]byte, 3)
	if _, err := ready.Read(buf); err != nil {
		t.Fatal(err)
	}
	ready.Close()
	sid := cmd.Process.Pid
	served := make(chan error, 1)
	go func() {
		served <- watchdog.Serve(r, watchdog.ServeOptions{Grace: 300 * time.Millisecond, Marker: marker})
	}()
	fmt.Fprintf(w, "+%d\n", sid)
	start := time.Now()
	w.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return")
	}
	_ = cmd.Wait()
	r.Close()
	if proctab.SessionAlive(sid) {
		t.Error("session still alive")
	}
	// The promise is grace + 1 s; on a saturated machine the kernel's
	// scheduling alone can pass that, so the test only catches a Serve that
	// waits far past its grace (a missed SIGKILL, a stuck poll).
	t.Logf("ended in %v", time.Since(start))
	if took := time.Since(start); took > 300*time.Millisecond+10*time.Second {
		t.Errorf("took %v, want within grace + 1s (10 s allowed for a loaded machine)", took)
	}
}

// BenchmarkRegister is what a command pays for the watchdog: one Started
// and one Ended, each a small write to a pipe read by another process.
func BenchmarkRegister(b *testing.B) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip(err)
	}
	c, err := watchdog.Start(watchdog.Options{Path: cat, Args: []string{"cat"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(5 * time.Second)
	for b.Loop() {
		c.Started(123456)
		c.Ended(123456)
	}
}
