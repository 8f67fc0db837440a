package testutil_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, func(mode string) int {
		if mode != "echo" {
			return 2
		}
		os.Stdout.WriteString(strings.Join(os.Args[2:], " ") + "\n")
		return 0
	})
}

func TestContextIsBounded(t *testing.T) {
	t.Parallel()
	deadline, ok := testutil.Context(t).Deadline()
	if !ok || time.Until(deadline) > testutil.Timeout {
		t.Errorf("deadline %v (set %v), want within %v", deadline, ok, testutil.Timeout)
	}
	ctx := testutil.WithTimeout(t, time.Millisecond)
	<-ctx.Done() // ends on its own: the test would time out otherwise
}

func TestChildRunsTheMode(t *testing.T) {
	t.Parallel()
	out, err := testutil.Child(t, testutil.Context(t), "echo", "a", "b").Output()
	if err != nil || string(out) != "a b\n" {
		t.Fatalf("child: %q, %v", out, err)
	}
}

// TestGone follows one process from running through its zombie (killed,
// not yet waited for) to reaped.
func TestGone(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if testutil.Gone(pid) || testutil.GroupGone(pid) {
		t.Fatalf("running process %d reported gone", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		// Not waited for yet: a zombie, which runs nothing.
		testutil.WaitGone(t, ctx, pid)
		if !testutil.GroupGone(pid) {
			t.Errorf("group %d of a zombie reported running", pid)
		}
	}
	cmd.Wait()
	testutil.WaitGone(t, ctx, pid)
	if !testutil.GroupGone(pid) {
		t.Errorf("group %d reported running after its only member was reaped", pid)
	}
}

// TestWaitFile: a half-written line is not enough; the whole line is
// returned once its newline is there.
func TestWaitFile(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "pid")
	// The child writes "123", waits for a line on stdin, then writes the
	// newline: the wait must not return in between.
	cmd := exec.CommandContext(ctx, "bash", "-c", `printf 123 > "$1"; echo half; read; echo >> "$1"`, "bash", path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "half\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	short := testutil.WithTimeout(t, 50*time.Millisecond)
	failed := fakeT{TB: t}
	func() {
		defer func() { recover() }()
		testutil.WaitFile(&failed, short, path)
	}()
	if !failed.fatal {
		t.Errorf("WaitFile returned on a line without its newline")
	}
	in.Write([]byte("\n"))
	if got := testutil.WaitFile(t, ctx, path); got != "123" {
		t.Errorf("WaitFile = %q, want 123", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	fatal bool
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(string, ...any) {
	f.fatal = true
	panic("fatal")
}
