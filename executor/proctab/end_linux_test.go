package proctab_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// End ends a session's groups — one that ignores SIGTERM, killed after the
// grace — and a marked process that left the session (setsid), and returns
// only when none of them can run; FindMarked finds the marked one first.
func TestEndSessionsAndMarked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	marker := fmt.Sprintf("PROCTAB_END_TEST_%d=1", os.Getpid())
	cmd := exec.CommandContext(ctx, "bash", "-c", `trap '' TERM; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; set -m; sleep 1000 & wait`)
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := strconv.Atoi(strings.TrimSpace(line))
	sid := cmd.Process.Pid
	// Started in the shell's group (no job control yet), setsid(1) does not
	// fork: $! is the daemon once it has its own session.
	for {
		if p, ok := proctab.Lookup(daemon); ok && p.Sid == daemon {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the setsid daemon never showed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	ms := proctab.FindMarked(mustList(t), []string{marker}, map[int]bool{sid: true})
	var pids []int
	for _, m := range ms {
		pids = append(pids, m.Pid)
		m.Close()
	}
	if !slices.Contains(pids, daemon) {
		t.Errorf("FindMarked = %v, want the daemon %d among them", pids, daemon)
	}
	start := time.Now()
	if err := proctab.End(proctab.Ending{Sessions: map[int]bool{sid: true}, Markers: []string{marker}, Grace: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("ended in %v: the shell ignores SIGTERM, so only the SIGKILL after the grace could", took)
	}
	_ = cmd.Wait()
	if proctab.SessionAlive(sid) {
		t.Error("the session survives End")
	}
	if ms := proctab.FindMarked(mustList(t), []string{marker}, nil); len(ms) != 0 {
		t.Errorf("marked processes survive End: %v", ms)
	}
	if !testutil.Gone(daemon) {
		t.Errorf("daemon %d survives End", daemon)
	}
}
