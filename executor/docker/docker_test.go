package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// procs lists the commands running in owner's container but the helper,
// the init and the ps that lists them.
func (s *setup) procs(t *testing.T, owner string) []string {
	t.Helper()
	res := s.runCmd(t, owner, "ps -e -o comm=")
	var out []string
	for _, name := range strings.Fields(res.Stdout.Text) {
		switch name {
		case "docker-init", "dsh-acp", "ps":
		default:
			out = append(out, name)
		}
	}
	return out
}

func TestSignalIsNotAnExitCode(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	res := s.runCmd(t, "s", "echo bye; kill -TERM $$")
	if res.Signal != "SIGTERM" || res.ExitCode != -1 || res.Stdout.Text != "bye\n" {
		t.Errorf("kill -TERM $$: signal %q exit %d stdout %q; want SIGTERM, -1, bye", res.Signal, res.ExitCode, res.Stdout.Text)
	}
	res = s.runCmd(t, "s", "exit 143")
	if res.Signal != "" || res.ExitCode != 143 {
		t.Errorf("exit 143: signal %q exit %d; want none, 143", res.Signal, res.ExitCode)
	}
}

func TestTimeoutEscalates(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The trap ignores SIGTERM: only the SIGKILL after the grace ends it;
	// its child dies with the group.
	res, err := s.ex.Run(ctx, executor.Spec{Command: `trap "" TERM; sleep 300 & echo ready; wait; wait`, Owner: "s", Root: s.cwd, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal != "SIGKILL" || res.Stdout.Text != "ready\n" {
		t.Fatalf("timed out %v signal %q stdout %q; want true, SIGKILL, ready", res.TimedOut, res.Signal, res.Stdout.Text)
	}
	waitNoProcs(t, s, "s")
}

// waitNoProcs waits until owner's container runs no command of ours.
func waitNoProcs(t *testing.T, s *setup, owner string) {
	t.Helper()
	deadline := time.Now().Add(grace + time.Second)
	for {
		left := s.procs(t, owner)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running in the container after the grace + 1s: %v", left)
		}
	}
}

func TestKillBackgroundTask(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	id, err := s.ex.Start(executor.Spec{Command: "sleep 300 & sleep 301", Owner: "s", Root: s.cwd})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan executor.TaskEnd, 1)
	defer s.ex.Subscribe(func(e executor.TaskEnd) {
		if e.ID == id {
			ended <- e
		}
	})()
	if _, err := s.ex.Kill(id); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ended:
		if e.Status.State != executor.Killed || e.Status.Signal != "SIGTERM" {
			t.Errorf("status %+v; want killed by SIGTERM", e.Status)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the killed task did not end")
	}
	waitNoProcs(t, s, "s")
}

// A setsid daemon outlives its command, as locally; the session's end
// (its container's) ends it.
func TestSetsidDaemonEndsWithSession(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	// The command waits until the daemon has left its session (it writes
	// its pid after setsid): before that, the daemon is a leftover of the
	// command's group, which the command's end kills, as it should.
	res := s.runCmd(t, "s", "setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' >/dev/null 2>&1 </dev/null & until [ -s daemon.pid ]; do sleep 0.01; done; echo started")
	if res.Stdout.Text != "started\n" {
		t.Fatalf("stdout %q", res.Stdout.Text)
	}
	if left := s.procs(t, "s"); len(left) != 1 || (left[0] != "sleep" && left[0] != "sh") {
		t.Fatalf("in the container: %v; want the daemon (sh, then sleep)", left)
	}
	start := time.Now()
	s.ex.KillOwned("s")
	waitNoContainer(t, s, start)
}

// waitNoContainer waits until none of the test's containers runs, and
// fails if that took longer than the grace plus a second; then until the
// engine removed them.
func waitNoContainer(t *testing.T, s *setup, since time.Time) {
	t.Helper()
	waitList(t, s, "-q")
	if took := time.Since(since); took > grace+time.Second {
		t.Errorf("the container ran %v after its end was asked; want at most the grace + 1s", took)
	}
	waitList(t, s, "-aq")
}

// waitList polls `docker ps FLAGS` of the test's containers until empty.
func waitList(t *testing.T, s *setup, flags string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command("docker", "ps", flags, "--filter", "label="+testLabel+"="+s.run).CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v: %s", err, out)
		}
		if strings.TrimSpace(string(out)) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers still there (docker ps %s): %s", flags, out)
		}
	}
}

func TestTwoSessionsContainersAndSpills(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{tailBytes: 64})
	cwdA, cwdB := t.TempDir(), t.TempDir()
	run := func(owner, root, cmd string) executor.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.ex.Run(ctx, executor.Spec{Command: cmd, Owner: owner, Root: root, Workdir: root})
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		return res
	}
	big := run("A", cwdA, "seq 1 1000")
	spill := big.Stdout.SpillPath
	if !big.Stdout.Truncated || spill == "" {
		t.Fatalf("no spill file: %+v", big.Stdout)
	}
	if res := run("A", cwdA, "tail -n 1 "+spill+"; pwd; hostname"); !strings.HasPrefix(res.Stdout.Text, "1000\n"+cwdA+"\n") {
		t.Errorf("A's next command: %q; want its spill's last line and its cwd", res.Stdout.Text)
	}
	resB := run("B", cwdB, "test -e "+spill+" && echo visible; test -e "+cwdA+" && echo sees-A; pwd")
	if resB.Stdout.Text != cwdB+"\n" {
		t.Errorf("B sees: %q; want only its own cwd", resB.Stdout.Text)
	}
	if res := run("A", cwdA, "echo x > "+spill+" 2>/dev/null || echo read-only"); res.Stdout.Text != "read-only\n" {
		t.Errorf("A wrote its spill file: %q", res.Stdout.Text)
	}
	if n := len(strings.Fields(s.containers(t))); n != 2 {
		t.Errorf("%d containers; want one per session", n)
	}
}

// A remote engine (here: a tcp:// listener on 127.0.0.1 in front of the
// test engine, whose mount namespace lacks the hidden directory) whose host
// lacks the session's directory: the first command says so.
func TestRemoteEngineWithoutTheCwd(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	if eng.Hidden == "" {
		t.Skip("DSH_TEST_DOCKER_HIDDEN not set: no directory the engine's host lacks")
	}
	cwd, err := os.MkdirTemp(eng.Hidden, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cwd) })
	addr := dockertest.TCPProxy(t, eng.Host)
	s := newSetup(t, setupOpts{host: "tcp://" + addr, cwd: cwd})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.ex.Run(ctx, executor.Spec{Command: "true", Owner: "s", Root: cwd})
	want := "the session's directory " + cwd + " does not exist on the Docker engine's host (tcp://" + addr + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v; want it to say %q", err, want)
	}
	if left := s.containers(t); left != "" {
		t.Errorf("a container was left: %s", left)
	}
}

func TestEngineDownIsAClearError(t *testing.T) {
	t.Parallel()
	dockertest.Need(t)
	sock := filepath.Join(t.TempDir(), "nobody.sock")
	conf, err := docker.NewConfiner(docker.Options{Image: "x", Helper: dockertest.Helper(t), Host: "unix://" + sock, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.NewLocal(executor.Options{DefaultWorkdir: t.TempDir(), SpillDir: t.TempDir(), Confine: conf, ConfineAll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 { // and again: a failed start is not remembered
		_, err = ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
		if err == nil || !strings.Contains(err.Error(), "docker: the engine at unix://"+sock+" does not answer") {
			t.Fatalf("error %v; want one saying the engine does not answer", err)
		}
	}
}

// The agent SIGKILLed: nothing of it can clean up, and the tether does.
func TestAgentKilledLeavesNothing(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := testutil.Child(t, ctx, "agent", s.helper, s.run, s.cwd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if n := len(strings.Fields(s.containers(t))); n != 1 {
		t.Errorf("%d containers before the kill; want 1", n)
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitNoContainer(t, s, start)
}

// agentChild is an agent with a background command in a container, which
// says ready and waits to be killed.
func agentChild(args []string) int {
	helper, run, cwd := args[0], args[1], args[2]
	conf, err := docker.NewConfiner(docker.Options{Image: os.Getenv("DSH_TEST_DOCKER_IMAGE"), Helper: helper, KillGrace: grace, Labels: map[string]string{testLabel: run}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ex, err := executor.NewLocal(executor.Options{DefaultWorkdir: cwd, SpillDir: os.TempDir(), Confine: conf, ConfineAll: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if _, err := ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := ex.Start(executor.Spec{Command: "sleep 300 & setsid sleep 301 & wait", Owner: "s"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig // never comes: the test SIGKILLs
	return 0
}

func child(mode string) int {
	if mode == "agent" {
		return agentChild(os.Args[2:])
	}
	return 2
}

func TestSweepRemovesOnlyGoneAgents(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	host, _ := os.Hostname()
	// A pid that is surely gone: a process of ours that ended.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(agent string) string {
		out, err := exec.Command("docker", "create", "--label", "dev.dsh-acp.agent="+agent, "--label", testLabel+"="+s.run, s.eng.Image, "true").CombinedOutput()
		if err != nil {
			t.Fatalf("docker create: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))[:12]
	}
	gone := mk(fmt.Sprintf("%s/%d", host, done.Process.Pid))
	alive := mk(fmt.Sprintf("%s/%d", host, os.Getppid()))
	other := mk("another-host/1")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", alive, other).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Agents started together sweep together: a container another sweep
	// is removing is not an error (the engine says "already in progress").
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := s.conf.Sweep(ctx)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	left := s.containers(t)
	if strings.Contains(left, gone) || !strings.Contains(left, alive) || !strings.Contains(left, other) {
		t.Errorf("after the sweep: %q; want %s gone, %s and %s kept", left, gone, alive, other)
	}
}

// An ssh:// engine is reached as the docker CLI reaches one: ssh running
// `docker system dial-stdio` there. Here the "ssh" is a script that
// records its arguments and pid and runs dial-stdio against the test
// engine; its processes end with their connections.
func TestSSHEngine(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker client for dial-stdio")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "ssh")
	script := "#!/bin/sh\necho \"$$ $*\" >> " + filepath.Join(dir, "calls") + "\nDOCKER_HOST=" + eng.Host + " exec docker system dial-stdio\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSetupWith(t, setupOpts{host: "ssh://tester@engine-host:2222"}, func(o *docker.Options) { o.SSH = fake })
	res := s.runCmd(t, "s", "echo $DOCKER_HOST; pwd")
	if res.Stdout.Text != "\n"+s.cwd+"\n" {
		t.Errorf("stdout %q; want no DOCKER_HOST and the cwd", res.Stdout.Text)
	}
	if err := s.ex.Close(); err != nil {
		t.Fatal(err)
	}
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	for _, l := range lines {
		pid, args, _ := strings.Cut(l, " ")
		if want := "-o BatchMode=yes -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=3 -T -l tester -p 2222 -- engine-host docker system dial-stdio"; args != want {
			t.Errorf("ssh args %q; want %q", args, want)
		}
		n, _ := strconv.Atoi(pid)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		testutil.WaitGone(t, ctx, n)
		cancel()
	}
}

func TestSocketNeverMounted(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	u, err := url.Parse(eng.Host)
	if err != nil || u.Scheme != "unix" {
		t.Skip("the test engine is not on a unix socket")
	}
	s := newSetupWith(t, setupOpts{}, func(o *docker.Options) { o.Read = []string{filepath.Dir(u.Path)} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
	if err == nil || !strings.Contains(err.Error(), "would put the engine's socket "+u.Path+" in reach of commands") {
		t.Fatalf("error %v; want the mount refused", err)
	}
}

// An image the engine lacks is pulled, as `docker run` does; where it
// cannot be (no registry reachable here), the command says so.
func TestMissingImage(t *testing.T) {
	t.Parallel()
	s := newSetupWith(t, setupOpts{}, func(o *docker.Options) { o.Image = "dsh-acp-test-absent:" + strconv.Itoa(os.Getpid()) })
	ctx, cancel := context.WithTimeout(context.Background(), 11*time.Minute)
	defer cancel()
	_, err := s.ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
	if err == nil || !strings.Contains(err.Error(), "is not on the engine") || !strings.Contains(err.Error(), "could not be pulled") {
		t.Fatalf("error %v; want it to say the image is missing and could not be pulled", err)
	}
}

// silentEngine is an engine that takes connections and never answers (a
// daemon that hangs, an ssh tunnel gone quiet). Each connection it takes
// is sent on conns.
func silentEngine(t *testing.T) (host string, conns <-chan net.Conn) {
	t.Helper()
	// Under /tmp: a unix socket's path is short (104 bytes on macOS), and
	// t.TempDir's are long there.
	dir, err := os.MkdirTemp("/tmp", "dsh-silent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for {
			select {
			case c := <-ch:
				c.Close()
			default:
				return
			}
		}
	})
	return "unix://" + sock, ch
}

// An engine that does not answer holds a command only until it is
// cancelled, its session closes, or the agent ends: none of them waits for
// the container's creation to time out (a minute).
func TestSilentEngineHoldsNothing(t *testing.T) {
	t.Parallel()
	helper := dockertest.Helper(t)
	// Far below the creation's timeout: without the fix each case waits
	// for it.
	const prompt = 20 * time.Second
	setup := func(t *testing.T) (*executor.Local, <-chan net.Conn) {
		host, conns := silentEngine(t)
		conf, err := docker.NewConfiner(docker.Options{Image: "x", Helper: helper, Host: host, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := executor.NewLocal(executor.Options{DefaultWorkdir: t.TempDir(), SpillDir: t.TempDir(), Confine: conf, ConfineAll: true})
		if err != nil {
			t.Fatal(err)
		}
		return ex, conns
	}
	within := func(t *testing.T, what string, start time.Time) {
		t.Helper()
		if took := time.Since(start); took > prompt {
			t.Errorf("%s took %v; want it at once", what, took)
		}
	}
	t.Run("cancel", func(t *testing.T) {
		ex, conns := setup(t)
		defer ex.Close()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
			errc <- err
		}()
		<-conns // the engine was asked
		start := time.Now()
		cancel()
		err := <-errc
		within(t, "a cancelled run", start)
		if !errors.Is(err, executor.ErrAborted) {
			t.Errorf("error %v; want ErrAborted", err)
		}
	})
	t.Run("session closed", func(t *testing.T) {
		ex, conns := setup(t)
		defer ex.Close()
		errc := make(chan error, 1)
		go func() {
			_, err := ex.Start(executor.Spec{Command: "true", Owner: "s"})
			errc <- err
		}()
		<-conns
		start := time.Now()
		ex.KillOwned("s")
		err := <-errc
		within(t, "a background start whose session closed", start)
		if err == nil {
			t.Error("the start succeeded; want an error")
		}
	})
	t.Run("agent ends", func(t *testing.T) {
		ex, conns := setup(t)
		errc := make(chan error, 1)
		go func() {
			_, err := ex.Run(context.Background(), executor.Spec{Command: "true", Owner: "s"})
			errc <- err
		}()
		<-conns
		start := time.Now()
		if err := ex.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		err := <-errc
		within(t, "the executor's Close", start)
		if err == nil {
			t.Error("the run succeeded; want an error")
		}
	})
}

// A --docker-read path the engine's host lacks is named as such, not
// blamed on the session's directory, which is there.
func TestMissingReadPath(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "absent")
	s := newSetupWith(t, setupOpts{}, func(o *docker.Options) { o.Read = []string{missing} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
	want := "docker: --docker-read " + missing + " does not exist on the Docker engine's host"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "session's directory") {
		t.Fatalf("error %v; want it to say %q and not blame the session's directory", err, want)
	}
	if left := s.containers(t); left != "" {
		t.Errorf("a container was left: %s", left)
	}
}

// A session's container that ended under it (removed by hand, killed, the
// engine restarted) is replaced at the next command: the session is not
// left failing every command.
func TestContainerGoneIsReplaced(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	s.runCmd(t, "s", "true")
	id := s.containers(t)
	if id == "" {
		t.Fatal("no container after the first command")
	}
	if out, err := exec.Command("docker", "rm", "-f", id).CombinedOutput(); err != nil {
		t.Fatalf("docker rm -f: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The command right after may still find the old container's tether
	// being cut: then it says so, and the one after runs.
	res, err := s.ex.Run(ctx, executor.Spec{Command: "echo again", Owner: "s", Root: s.cwd})
	if err != nil {
		if !strings.Contains(err.Error(), "the session's container is gone") {
			t.Fatalf("run after the container was removed: %v; want a new container, or an error saying it is gone", err)
		}
		res, err = s.ex.Run(ctx, executor.Spec{Command: "echo again", Owner: "s", Root: s.cwd})
	}
	if err != nil || res.Stdout.Text != "again\n" {
		t.Fatalf("run in the new container: %v, stdout %q; want again", err, res.Stdout.Text)
	}
	if now := s.containers(t); now == "" || now == id {
		t.Errorf("containers %q; want a new one, not %s", now, id)
	}
}

// A container that stops answering once it is made (frozen here with
// docker pause; for a user, a hung engine or an ssh tunnel gone quiet)
// holds a command only until it is cancelled: the start already sent is
// given up (the helper kills it should it ever run), the turn goes on.
func TestFrozenContainerHoldsNothing(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	s := newSetupWith(t, setupOpts{}, func(o *docker.Options) { o.Logger = zap.New(core) })
	s.runCmd(t, "s", "true")
	id := s.containers(t)
	if out, err := exec.Command("docker", "pause", id).CombinedOutput(); err != nil {
		t.Fatalf("docker pause: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "unpause", id).Run() })
	const sentMsg = "command sent to the container"
	before := logs.FilterMessage(sentMsg).Len()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.ex.Run(ctx, executor.Spec{Command: "true", Owner: "s", Root: s.cwd})
		errc <- err
	}()
	// Cancelled once the start was sent: the wait for the helper's answer
	// is what is tested.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	waitSent := time.NewTimer(time.Minute)
	defer waitSent.Stop()
	for logs.FilterMessage(sentMsg).Len() == before {
		select {
		case <-tick.C:
		case <-waitSent.C:
			t.Fatal("the command was never sent")
		}
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, executor.ErrAborted) {
			t.Errorf("error %v; want ErrAborted", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled command is still waiting for its frozen container")
	}
}

// A session's other roots are mounted at their own paths, writable like
// its directory, with the files seen from this side; a tree that is not
// one of them is not in the container, and the file operations refuse it.
func TestOtherRootsMounted(t *testing.T) {
	t.Parallel()
	s := newSetup(t, setupOpts{})
	cwd, lib, other := t.TempDir(), t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.ex.Run(ctx, executor.Spec{Owner: "A", Root: cwd, Roots: []string{lib}, Workdir: cwd,
		Command: "echo in-lib > " + lib + "/f && pwd && (test -e " + other + " && echo sees-other || echo no-other)"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.Text != cwd+"\nno-other\n" || res.ExitCode != 0 {
		t.Errorf("command: %+v; want it to run in %s, write in %s, not see %s", res, cwd, lib, other)
	}
	if b, err := os.ReadFile(filepath.Join(lib, "f")); err != nil || string(b) != "in-lib\n" {
		t.Errorf("the host sees %q, %v in the other root; want in-lib", b, err)
	}
	files, err := s.ex.Files(executor.FileAccess{Owner: "A", Root: cwd, Roots: []string{lib}, Sandboxed: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := files.WriteFile(filepath.Join(lib, "g"), []byte("by the tool\n")); err != nil {
		t.Errorf("file write in the other root: %v", err)
	}
	if err := files.WriteFile(filepath.Join(other, "g"), []byte("x")); err == nil || !strings.Contains(err.Error(), "only the session's directories") {
		t.Errorf("file write outside the roots: %v; want a refusal naming the session's directories", err)
	}
}
