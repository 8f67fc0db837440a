package proctab_test

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m, nil) }

func TestListShowsSelf(t *testing.T) {
	ps, err := proctab.List()
	if err != nil {
		t.Fatal(err)
	}
	pgid, _ := unix.Getpgid(0)
	sid, _ := unix.Getsid(0)
	for _, p := range ps {
		if p.Pid == os.Getpid() {
			if p.Pgid != pgid || p.Sid != sid || p.Zombie {
				t.Errorf("self = %+v, want pgid %d sid %d", p, pgid, sid)
			}
			return
		}
	}
	t.Errorf("self (%d) not among %d processes", os.Getpid(), len(ps))
}

// A process that leaves its group but not its session (what coreutils
// `timeout` and `set -m` do) is found and ended by SignalSession, and
// SessionAlive follows it; GroupAlive of the leader's group does not see it.
func TestSignalSessionReachesOtherGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The leader starts a job-controlled child (its own group), says its
	// pid, and exits.
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -m; sleep 1000 & echo $!")
	cmd.Stdout = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	sid := cmd.Process.Pid
	buf := make([]byte, 32)
	n, _ := r.Read(buf)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no pid")
	}
	if proctab.GroupAlive(sid) {
		t.Error("leader's group alive after it exited")
	}
	if !proctab.SessionAlive(sid) {
		t.Fatal("session has no live member; the job should be in it")
	}
	if proctab.Groups(mustList(t), map[int]bool{sid: true})[sid] {
		t.Error("leader group listed")
	}
	got, err := proctab.SignalSession(sid, unix.SIGTERM)
	if err != nil || got != 1 {
		t.Fatalf("SignalSession = %d, %v; want 1 group", got, err)
	}
	for proctab.SessionAlive(sid) {
		select {
		case <-ctx.Done():
			t.Fatal("session member survived SIGTERM")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, err := proctab.SignalSession(1, unix.SIGTERM); err == nil {
		t.Error("SignalSession(1) accepted")
	}
}

func mustList(t *testing.T) []proctab.Proc {
	t.Helper()
	ps, err := proctab.List()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
