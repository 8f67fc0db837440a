package executor_test

import (
	"bufio"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func startChild(t *testing.T, script string, inputGrace time.Duration, w *watcher) *executor.Child {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	spec := executor.ChildSpec{Path: bash, Args: []string{"bash", "-c", script}, InputGrace: inputGrace, Grace: 200 * time.Millisecond}
	if w != nil {
		spec.Watcher = w
	}
	c, err := executor.StartChild(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A child is a connection: what goes in comes out. Close ends its input;
// one that exits on it has the input grace to, and ends by itself.
func TestChildEndsOnItsInput(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	c := startChild(t, `cat`, time.Minute, w)
	if !w.seen("+" + strconv.Itoa(c.Pid())) {
		t.Errorf("the watcher was not told of %d: %v", c.Pid(), w.events)
	}
	if _, err := io.WriteString(c.Stdin(), "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c.Stdout()).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("read %q, %v; want ping", line, err)
	}
	start := time.Now()
	_ = c.Close()
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("Close took %v for a child that exits at the end of its input", took)
	}
	if err := c.Err(); err != nil {
		t.Errorf("cat ended %v; want exit status 0 (it saw EOF, no signal)", err)
	}
	if !w.seen("-" + strconv.Itoa(c.Pid())) {
		t.Errorf("the watcher was not told of its end: %v", w.events)
	}
}

// A child that ignores the end of its input and SIGTERM is killed after
// the grace, with what it left in its session (a job moved out of its
// group); Close returns once they are all gone.
func TestChildCloseEndsItsSession(t *testing.T) {
	t.Parallel()
	c := startChild(t, `trap '' TERM; set -m; sleep 1000 & echo $!; exec sleep 1000 </dev/null`, 0, nil)
	line, err := bufio.NewReader(c.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	job, _ := strconv.Atoi(strings.TrimSpace(line))
	_ = c.Close()
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("child ended %v; want killed (it ignores SIGTERM)", err)
	}
	if !testutil.Gone(job) {
		t.Errorf("its job %d survives Close", job)
	}
}
