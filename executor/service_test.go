package executor_test

import (
	"bufio"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// watcher records what the executor tells the watchdog.
type watcher struct {
	mu     sync.Mutex
	events []string
}

func (w *watcher) Started(sid int) { w.add("+" + strconv.Itoa(sid)) }
func (w *watcher) Ended(sid int)   { w.add("-" + strconv.Itoa(sid)) }
func (w *watcher) add(e string) {
	w.mu.Lock()
	w.events = append(w.events, e)
	w.mu.Unlock()
}
func (w *watcher) seen(e string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.events {
		if x == e {
			return true
		}
	}
	return false
}

// daemonScript starts a sleep in a session of its own (it left the
// service's group and session), prints its pid, then echoes its stdin.
const daemonScript = `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec cat`

// startDaemonService starts daemonScript as owner's service and returns it
// with the daemon's pid, once the daemon's session is its own.
func startDaemonService(t *testing.T, l *executor.Local, owner string) (*executor.Service, int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	svc, err := l.StartService(executor.ServiceSpec{Owner: owner, Path: bash, Args: []string{"bash", "-c", daemonScript}, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(svc.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatalf("read the daemon's pid: %v", err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("daemon pid %q", line)
	}
	return svc, daemon
}

// A service talks over its stdin and stdout, is told to the watchdog, and
// ends with its owner (KillOwned) — its setsid child too, found by the
// service's marker — while another owner's service runs on.
func TestServiceEndsWithOwner(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	w := &watcher{}
	l := newLocal(t, executor.Options{Watcher: w})
	svc, daemon := startDaemonService(t, l, "s1")
	other, otherDaemon := startDaemonService(t, l, "s2")
	if !w.seen("+" + strconv.Itoa(svc.Pid())) {
		t.Errorf("the watchdog was not told of service %d", svc.Pid())
	}
	if _, err := svc.Stdin().Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	// The first line (the pid) was read by a reader of its own; cat's echo
	// is all that comes next.
	buf := make([]byte, 5)
	if _, err := svc.Stdout().Read(buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("echo = %q, %v", buf, err)
	}
	if n := l.KillOwned("s1"); n != 0 {
		t.Errorf("KillOwned counted %d tasks; services are not tasks", n)
	}
	select {
	case <-svc.Done():
	case <-ctx.Done():
		t.Fatal("the service did not end with its owner")
	}
	if !testutil.Gone(daemon) {
		t.Errorf("the service's setsid child %d survives KillOwned", daemon)
	}
	if err := svc.Err(); err == nil || err.Error() != "signal: terminated" {
		t.Errorf("Err = %v, want signal: terminated", err)
	}
	if !w.seen("-" + strconv.Itoa(svc.Pid())) {
		t.Errorf("the watchdog was not told service %d ended", svc.Pid())
	}
	select {
	case <-other.Done():
		t.Fatal("another owner's service ended too")
	default:
	}
	if testutil.Gone(otherDaemon) {
		t.Fatal("another owner's service's child ended too")
	}
	// Close ends the rest, the child that left too.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-other.Done():
	default:
		t.Error("Close returned before the service was over")
	}
	if !testutil.Gone(otherDaemon) {
		t.Errorf("the service's setsid child %d survives Close", otherDaemon)
	}
	if _, err := l.StartService(executor.ServiceSpec{Owner: "s1", Path: "/bin/true", Dir: "/"}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("StartService after Close: %v", err)
	}
}

// A service that ends by itself is over with what it left; Err words its
// exit status as os/exec does.
func TestServiceExits(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	l := newLocal(t, executor.Options{})
	svc, daemon := startDaemonService(t, l, "s")
	if err := svc.Stdin().Close(); err != nil { // cat ends, and with it the service
		t.Fatal(err)
	}
	select {
	case <-svc.Done():
	case <-ctx.Done():
		t.Fatal("the service did not end")
	}
	if err := svc.Err(); err != nil {
		t.Errorf("Err = %v, want nil (exit status 0)", err)
	}
	if !testutil.Gone(daemon) {
		t.Errorf("the setsid child %d outlives its service", daemon)
	}
	bash, _ := exec.LookPath("bash")
	failing, err := l.StartService(executor.ServiceSpec{Owner: "s", Path: bash, Args: []string{"bash", "-c", "exit 3"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	<-failing.Done()
	if err := failing.Err(); err == nil || err.Error() != "exit status 3" {
		t.Errorf("Err = %v, want exit status 3", err)
	}
}

func TestServiceBadSpec(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	for _, spec := range []executor.ServiceSpec{
		{Path: "/bin/true", Dir: "/"},                // no owner
		{Owner: "s", Path: "true", Dir: "/"},         // relative path
		{Owner: "s", Path: "/nonexistent", Dir: "/"}, // cannot start
	} {
		if svc, err := l.StartService(spec); err == nil {
			t.Errorf("StartService(%+v) = %v, want an error", spec, svc)
		}
	}
}

// Close ends a service as MCP asks: a server that exits at the end of its
// input does so by itself (no signal), one that ignores it is stopped
// once the kill grace has passed, and Close returns when either is gone.
func TestServiceClose(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}})
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ script, want string }{
		{"cat", ""},
		{"exec </dev/null; echo ready; exec sleep 1000", "signal: terminated"},
	} {
		svc, err := l.StartService(executor.ServiceSpec{Owner: "s", Path: bash, Args: []string{"bash", "-c", c.script}, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if c.want != "" {
			// Ready: it let go of its stdin, so only a signal ends it.
			if _, err := bufio.NewReader(svc.Stdout()).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		select {
		case <-svc.Done():
		default:
			t.Errorf("%s: Close returned before the service was gone", c.script)
		}
		got := ""
		if err := svc.Wait(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: ended %q, want %q", c.script, got, c.want)
		}
		if c.want != "" && took < 300*time.Millisecond {
			t.Errorf("%s: stopped after %v, before the grace", c.script, took)
		}
	}
}
