package proctab_test

import (
	"bufio"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// child starts bash -c script in a group of its own, waits for its first
// line (it is ready), and returns it with a channel closed once waited for.
func child(t *testing.T, script string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = proctab.SignalGroup(cmd.Process.Pid, unix.SIGKILL)
		<-exited
	})
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("%s: no ready line: %v", script, err)
	}
	return cmd, exited
}

func endedBy(t *testing.T, cmd *exec.Cmd, want unix.Signal) {
	t.Helper()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != want {
		t.Errorf("child ended %v; want by %v", cmd.ProcessState, want)
	}
}

// EndChild: a child that ignores SIGTERM gets SIGKILL after the grace; a
// stopped one is continued, so its SIGTERM ends it (without the SIGCONT it
// would hold it pending until the SIGKILL a minute later).
func TestEndChild(t *testing.T) {
	t.Parallel()
	t.Run("ignores SIGTERM", func(t *testing.T) {
		t.Parallel()
		cmd, exited := child(t, `trap '' TERM; echo ready; exec sleep 1000`)
		start := time.Now()
		proctab.EndChild(cmd.Process, exited, 100*time.Millisecond)
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("ended in %v, before the grace", took)
		}
		endedBy(t, cmd, unix.SIGKILL)
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		cmd, exited := child(t, `echo ready; exec sleep 1000`)
		if err := unix.Kill(cmd.Process.Pid, unix.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Waited for with WUNTRACED, which reports the stop (the exit is
		// left to cmd.Wait, which waits for exits only).
		var ws unix.WaitStatus
		if _, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WUNTRACED, nil); err != nil || !ws.Stopped() {
			t.Fatalf("wait for the stop: %v, status %#x", err, ws)
		}
		proctab.EndChild(cmd.Process, exited, time.Minute)
		endedBy(t, cmd, unix.SIGTERM)
	})
}

// target is a real child reached only through the Target interface, as a
// container's command is through its helper.
type target struct {
	cmd    *exec.Cmd
	exited <-chan struct{}

	mu   sync.Mutex
	sent []unix.Signal
}

func (tg *target) Signal(sig unix.Signal) {
	tg.mu.Lock()
	tg.sent = append(tg.sent, sig)
	tg.mu.Unlock()
	_ = proctab.SignalProcess(tg.cmd.Process, sig)
}

func (tg *target) Alive() bool {
	select {
	case <-tg.exited:
		return false
	default:
		return true
	}
}

// End ends targets on the same schedule as groups: SIGTERM once, SIGKILL
// after the grace to one that ignores it, and with AllTermed only the
// SIGKILL.
func TestEndTargets(t *testing.T) {
	t.Parallel()
	for _, all := range []bool{false, true} {
		cmd, exited := child(t, `trap '' TERM; echo ready; exec sleep 1000`)
		tg := &target{cmd: cmd, exited: exited}
		start := time.Now()
		if err := proctab.End(proctab.Ending{Targets: []proctab.Target{tg}, AllTermed: all, Grace: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("AllTermed %v: ended in %v, before the grace", all, took)
		}
		if tg.Alive() {
			t.Fatalf("AllTermed %v: End returned with the target alive", all)
		}
		endedBy(t, cmd, unix.SIGKILL)
		tg.mu.Lock()
		sent := tg.sent
		tg.mu.Unlock()
		terms := 0
		for _, s := range sent {
			if s == unix.SIGTERM {
				terms++
			}
		}
		if want := map[bool]int{false: 1, true: 0}[all]; terms != want || len(sent) == 0 || sent[len(sent)-1] != unix.SIGKILL {
			t.Errorf("AllTermed %v: sent %v; want %d SIGTERM, then SIGKILL", all, sent, want)
		}
	}
}
