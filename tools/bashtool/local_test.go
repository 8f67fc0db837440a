package bashtool_test

// The scenarios of the fake-executor tests again, against the real local
// executor: real processes, real process groups, real spill files.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

// pollDeadline bounds every wait on a real process.
const pollDeadline = 20 * time.Second

// local is a real executor with the tool set over it.
type local struct {
	*toolbox
	exec    *executor.Local
	notices chan string
}

// newLocal starts a local executor with small output limits so truncation
// and dropped output are cheap to provoke. The executor is closed at cleanup,
// after the tool set; Close waits until every process group is gone.
func newLocal(t *testing.T, opts executor.Options) *local {
	t.Helper()
	return newLocalTracked(t, opts, nil)
}

// newLocalTracked is newLocal with the tool set measuring what commands
// change with tr.
func newLocalTracked(t *testing.T, opts executor.Options, tr *changes.Tracker) *local {
	t.Helper()
	opts.Logger = zaptest.NewLogger(t)
	if opts.SpillDir == "" {
		opts.SpillDir = t.TempDir()
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = 2 * time.Second
	}
	switch os.Getenv(testExecutorEnv) {
	case "sandbox":
		opts.Confine, opts.ConfineAll = sandboxConfiner(t), true
	case "docker":
		opts.Confine, opts.ConfineAll = dockerConfiner(t, opts.KillGrace), true
	}
	ex, err := executor.NewLocal(opts)
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Errorf("executor Close: %v", err)
		}
	})
	l := &local{exec: ex, notices: make(chan string, 64)}
	l.toolbox = newToolbox(t, bashtool.Options{
		Executor: ex,
		// The same limits value for both, as cmd wires them.
		Limits:  opts.Limits,
		Logger:  zaptest.NewLogger(t),
		Changes: tr,
		Notify: func(session, text string) {
			select {
			case l.notices <- session + ": " + text:
			default:
				t.Errorf("notice dropped: %s", text)
			}
		},
	})
	return l
}

// testExecutorEnv is the test switch: "sandbox" runs the real-executor
// tests against the sandboxed executor, which must give the same text.
const testExecutorEnv = "DSH_TEST_EXECUTOR"

// probe runs the sandbox probe once for the test binary.
var probe = sync.OnceValue(func() sandbox.Availability { return sandbox.Probe(nil) })

// sandboxConfiner confines every command of a test's executor; without a
// sandbox here the switch fails the test rather than run unconfined.
func sandboxConfiner(t *testing.T) executor.Confiner {
	t.Helper()
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: probe()})
	if err != nil {
		t.Fatalf("%s=sandbox: %v", testExecutorEnv, err)
	}
	c, err := sandbox.NewConfiner(sandbox.ConfinerOptions{Launcher: l, TempParent: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dockerConfiner runs every command of a test's executor in a container
// of the test engine's (.ci/docker-up); without one the switch fails the
// test.
func dockerConfiner(t *testing.T, grace time.Duration) executor.Confiner {
	t.Helper()
	e := dockertest.Need(t)
	c, err := docker.NewConfiner(docker.Options{
		Image:     e.Image,
		Helper:    dockertest.Helper(t),
		KillGrace: grace,
		Labels:    map[string]string{"dev.dsh-acp.test": t.Name()},
		Logger:    zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bashArgs builds bash arguments.
func bashArgs(t *testing.T, command string, extra map[string]any) json.RawMessage {
	t.Helper()
	a := map[string]any{"command": command, "description": "Run a test command"}
	for k, v := range extra {
		a[k] = v
	}
	return args(t, a)
}

func (l *local) run(t *testing.T, caller tools.Caller, command string, extra map[string]any) tools.Result {
	t.Helper()
	return run(testutil.Context(t), l.bash, invocation{caller: caller, args: bashArgs(t, command, extra)})
}

// pollOutput reads a task's output until done reports true for the text
// accumulated since the first poll, and returns that text.
func (l *local) pollOutput(t *testing.T, caller tools.Caller, id string, done func(all string) bool) string {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var all strings.Builder
	for {
		res := run(testutil.Context(t), l.output, call(caller, taskArgs(id)))
		if res.IsError {
			t.Fatalf("bash_output %s: %s", id, res.Text)
		}
		all.WriteString(res.Text)
		all.WriteString("\x00") // separates reads
		if done(all.String()) {
			return all.String()
		}
		if time.Now().After(deadline) {
			s := all.String()
			t.Fatalf("bash_output %s: condition not met within %v; last reads: %q", id, pollDeadline, s[max(0, len(s)-500):])
		}
		<-tick.C
	}
}

// waitNotice waits for the next completion notice.
func (l *local) waitNotice(t *testing.T) string {
	t.Helper()
	select {
	case n := <-l.notices:
		return n
	case <-time.After(pollDeadline):
		t.Fatal("no completion notice")
		return ""
	}
}

// realPath resolves symlinks so that paths compare with what pwd prints.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatalf("EvalSymlinks: %v", err)
	}
	return r
}

func TestLocalResultText(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	tests := []struct {
		name    string
		command string
		extra   map[string]any
		want    string
	}{
		{name: "echo hello", command: "echo hello", want: "hello\n"},
		{name: "true", command: "true", want: "(no output)"},
		{name: "out and err", command: "echo out; echo err >&2", want: "out\n[stderr]\nerr\n"},
		{name: "exit 3", command: "echo failing; exit 3", want: "failing\n[exit code: 3]"},
		{name: "sleep timed out", command: "sleep 60", extra: map[string]any{"timeoutMs": 100},
			want: "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"},
		{name: "no trailing newlines", command: "printf out; printf err >&2", want: "out\n[stderr]\nerr"},
		{name: "killed by a signal", command: "echo bye; kill -KILL $$", want: "bye\n[killed by signal: SIGKILL]"},
		{name: "trap exits 0 on timeout", command: "trap 'echo trapped; exit 0' TERM; sleep 60 & wait",
			extra: map[string]any{"timeoutMs": 500}, want: "trapped\n[timed out after 500ms]"},
		{name: "fractional timeout rounds up", command: "sleep 60", extra: map[string]any{"timeoutMs": 99.2},
			want: "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"},
		{name: "leftover child does not hold the call", command: "sleep 100 & echo started",
			want: "started\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := l.run(t, tools.Caller{SessionID: "s", Cwd: t.TempDir()}, tc.command, tc.extra)
			if res.IsError {
				t.Errorf("IsError = true (text %q)", res.Text)
			}
			if diff := cmp.Diff(tc.want, res.Text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLocalTruncation(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 64}})
	seq := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		command string
		// re matches the text; its first group is the spill path.
		re   string
		full string
	}{
		{name: "stdout", command: "seq 1 1000",
			re: `^(?s:.*)\n999\n1000\n\n\[output truncated; full output: (/[^\]]+)\]$`, full: seq(1000)},
		{name: "stderr with exit code", command: "echo start; seq 1 1000 >&2; exit 4",
			re: `^start\n\[stderr\]\n(?s:.*)\n1000\n\n\[output truncated; full output: (/[^\]]+)\]\n\[exit code: 4\]$`, full: seq(1000)},
		{name: "utf-8 at the cut", command: `for i in $(seq 100); do printf 'é世'; done`,
			re: `^世?(?:é世)+\n\[output truncated; full output: (/[^\]]+)\]$`, full: strings.Repeat("é世", 100)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := l.run(t, tools.Caller{SessionID: "s", Cwd: t.TempDir()}, tc.command, nil)
			m := regexp.MustCompile(tc.re).FindStringSubmatch(res.Text)
			if m == nil {
				t.Fatalf("text %q does not match %s", res.Text, tc.re)
			}
			if !utf8.ValidString(res.Text) {
				t.Errorf("text is not valid UTF-8: %q", res.Text)
			}
			full, err := os.ReadFile(m[1])
			if err != nil {
				t.Fatalf("read spill file: %v", err)
			}
			if string(full) != tc.full {
				t.Errorf("spill file holds %d bytes, want the full %d", len(full), len(tc.full))
			}
			if !rawOf(t, res).Truncated || !cmp.Equal(rawOf(t, res).SpillPaths, []string{m[1]}) {
				t.Errorf("raw output %+v, want truncated with spill path %s", rawOf(t, res), m[1])
			}
		})
	}
}

func TestLocalWorkdir(t *testing.T) {
	t.Parallel()
	def := t.TempDir()
	if err := os.Mkdir(filepath.Join(def, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, executor.Options{DefaultWorkdir: def})
	cwd, other := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cwd     string
		workdir string
		want    string // pwd output; "" means an error is expected
		wantErr string
	}{
		{name: "none", cwd: cwd, want: cwd},
		{name: "relative", cwd: cwd, workdir: "sub", want: filepath.Join(cwd, "sub")},
		{name: "absolute", cwd: cwd, workdir: other, want: other},
		{name: "missing directory", cwd: cwd, workdir: "missing",
			wantErr: "Error: workdir " + filepath.Join(cwd, "missing") + " does not exist"},
		{name: "no session cwd", want: def},
		{name: "no session cwd relative", workdir: "sub", want: filepath.Join(def, "sub")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "absolute" && os.Getenv(testExecutorEnv) == "docker" {
				t.Skip("a container has only the session's directory: a workdir outside it is not there (README: Commands in containers)")
			}
			extra := map[string]any{}
			if tc.workdir != "" {
				extra["workdir"] = tc.workdir
			}
			res := l.run(t, tools.Caller{SessionID: "s", Cwd: tc.cwd}, "pwd -P", extra)
			if tc.wantErr != "" {
				if !res.IsError || res.Text != tc.wantErr {
					t.Errorf("got %q (IsError %v), want %q as an error", res.Text, res.IsError, tc.wantErr)
				}
				return
			}
			if want := realPath(t, tc.want) + "\n"; res.IsError || res.Text != want {
				t.Errorf("got %q (IsError %v), want %q", res.Text, res.IsError, want)
			}
			if rawOf(t, res).Cwd != tc.want {
				t.Errorf("display cwd %q, want %q", rawOf(t, res).Cwd, tc.want)
			}
		})
	}
}

// TestLocalTwoSessions: two sessions share one executor; each runs pwd at
// the same moment and sees its own cwd, and neither can reach the other's
// background task.
func TestLocalTwoSessions(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	b := tools.Caller{SessionID: "B", Cwd: t.TempDir()}

	const rounds = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan string, 2*rounds)
	pwd := bashArgs(t, "pwd -P", nil)
	for _, c := range []tools.Caller{a, b} {
		want := realPath(t, c.Cwd) + "\n"
		for range rounds {
			wg.Go(func() {
				<-start
				res := run(testutil.Context(t), l.bash, invocation{caller: c, args: pwd})
				if res.Text != want {
					errs <- fmt.Sprintf("session %s: got %q, want %q", c.SessionID, res.Text, want)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	res := l.run(t, a, "echo secret; exec sleep 100", map[string]any{"run_in_background": true})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	id := rawOf(t, res).TaskID
	for _, tl := range []tools.Tool{l.output, l.kill} {
		if got := run(testutil.Context(t), tl, call(b, taskArgs(id))); !got.IsError || got.Text != "Error: task "+id+" belongs to another session" {
			t.Errorf("%s by B: got %q (IsError %v)", tl.Name(), got.Text, got.IsError)
		}
	}
	l.pollOutput(t, a, id, func(all string) bool { return strings.Contains(all, "secret\n") })
	if got := run(testutil.Context(t), l.kill, call(a, taskArgs(id))); got.Text != "killed background task "+id {
		t.Errorf("kill by A: got %q", got.Text)
	}
	if n := l.waitNotice(t); n != "A: background bash task "+id+" finished [status: killed by SIGTERM]. Read its output with bash_output." {
		t.Errorf("notice %q", n)
	}
}

func TestLocalOwnershipMatrix(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	owners := []struct {
		name   string
		caller tools.Caller
	}{{"owned task", tools.Caller{SessionID: "A", Cwd: t.TempDir()}}, {"unowned task", tools.Caller{Cwd: t.TempDir()}}}
	callers := []struct {
		name string
		id   string
	}{{"owner", "A"}, {"other session", "B"}, {"no session", ""}}
	for _, o := range owners {
		for _, c := range callers {
			for _, ended := range []bool{false, true} {
				for _, tool := range []string{"bash_output", "bash_kill"} {
					name := o.name + "/" + c.name + "/" + tool
					if ended {
						name += "/after end"
					}
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						command := "exec sleep 100"
						if ended {
							command = "true"
						}
						res := l.run(t, o.caller, command, map[string]any{"run_in_background": true})
						if res.IsError {
							t.Fatalf("start: %s", res.Text)
						}
						id := rawOf(t, res).TaskID
						if ended {
							waitEnded(t, l.exec, id)
						}
						caller := tools.Caller{SessionID: c.id}
						allowed := o.caller.SessionID == "" || o.caller.SessionID == c.id
						var want string
						var got tools.Result
						if tool == "bash_output" {
							got = run(testutil.Context(t), l.output, call(caller, taskArgs(id)))
							want = "(no new output)\n[status: running]"
							if ended {
								want = "(no new output)\n[status: completed, exit code: 0]"
							}
						} else {
							got = run(testutil.Context(t), l.kill, call(caller, taskArgs(id)))
							want = "killed background task " + id
							if ended {
								want = "task " + id + " had already finished"
							}
						}
						if !allowed {
							want = "Error: task " + id + " belongs to another session"
						}
						if got.Text != want || got.IsError == allowed {
							t.Errorf("got %q (IsError %v), want %q", got.Text, got.IsError, want)
						}
						if !ended && (tool == "bash_output" || !allowed) {
							// Not killed by the call: stop it so the test ends quickly.
							if _, err := l.exec.Kill(id); err != nil {
								t.Errorf("cleanup kill: %v", err)
							}
						}
					})
				}
			}
		}
	}
}

// waitEnded polls the executor until a task is no longer running.
func waitEnded(t *testing.T, ex *executor.Local, id string) {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := ex.Info(id)
		if err != nil {
			t.Fatalf("Info %s: %v", id, err)
		}
		if info.Status.State != executor.Running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still running after %v", id, pollDeadline)
		}
		<-tick.C
	}
}

// TestLocalIncrementalReads drives a task through two handshakes: it prints
// "first", waits for a file the test creates, prints "second" and waits for
// another.
func TestLocalIncrementalReads(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	const script = `echo first
until [ -e go1 ]; do sleep 0.01; done
echo second
until [ -e go2 ]; do sleep 0.01; done`
	res := l.run(t, a, script, map[string]any{"run_in_background": true})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	id := rawOf(t, res).TaskID
	if !regexp.MustCompile(`^started background task bash-\d+$`).MatchString(res.Text) {
		t.Errorf("start text %q", res.Text)
	}

	all := l.pollOutput(t, a, id, func(all string) bool { return strings.Contains(all, "first") })
	if want := "first\n\n[status: running]\x00"; !strings.HasSuffix(all, want) {
		t.Errorf("first reads %q, want them to end with %q", all, want)
	}
	touch(t, filepath.Join(a.Cwd, "go1"))
	all = l.pollOutput(t, a, id, func(all string) bool { return strings.Contains(all, "second") })
	if want := "second\n\n[status: running]\x00"; !strings.HasSuffix(all, want) || strings.Contains(all, "first") {
		t.Errorf("second reads %q, want them to end with %q and not repeat first", all, want)
	}
	if got := run(testutil.Context(t), l.output, call(a, taskArgs(id))); got.Text != "(no new output)\n[status: running]" {
		t.Errorf("third read %q", got.Text)
	}
	touch(t, filepath.Join(a.Cwd, "go2"))
	if n := l.waitNotice(t); n != "A: background bash task "+id+" finished [status: completed, exit code: 0]. Read its output with bash_output." {
		t.Errorf("notice %q", n)
	}
	if got := run(testutil.Context(t), l.output, call(a, taskArgs(id))); got.Text != "(no new output)\n[status: completed, exit code: 0]" {
		t.Errorf("read after the end %q", got.Text)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatalf("touch: %v", err)
	}
}

func TestLocalLossyRead(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 64, UnreadBytes: 64}})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	res := l.run(t, a, "seq 1 1000", map[string]any{"run_in_background": true})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	id := rawOf(t, res).TaskID
	l.waitNotice(t)
	got := run(testutil.Context(t), l.output, call(a, taskArgs(id)))
	re := regexp.MustCompile(`^(?s:.*)\n1000\n\n\[some output was dropped from memory; full output: (/[^,]+), \(unavailable\)\]\n\[status: completed, exit code: 0\]$`)
	m := re.FindStringSubmatch(got.Text)
	if m == nil {
		t.Fatalf("read %q does not match %s", got.Text, re)
	}
	full, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("read spill file: %v", err)
	}
	if !strings.HasPrefix(string(full), "1\n2\n3\n") || !strings.HasSuffix(string(full), "\n999\n1000\n") {
		t.Errorf("spill file does not hold the whole output (%d bytes)", len(full))
	}
	if !rawOf(t, got).Truncated {
		t.Errorf("raw output %+v, want truncated", rawOf(t, got))
	}
}

func TestLocalKillTwice(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	res := l.run(t, a, "echo ready; exec sleep 100", map[string]any{"run_in_background": true})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	id := rawOf(t, res).TaskID
	l.pollOutput(t, a, id, func(all string) bool { return strings.Contains(all, "ready\n") })
	if got := run(testutil.Context(t), l.kill, call(a, taskArgs(id))); got.IsError || got.Text != "killed background task "+id {
		t.Errorf("first kill: %q (IsError %v)", got.Text, got.IsError)
	}
	if n := l.waitNotice(t); n != "A: background bash task "+id+" finished [status: killed by SIGTERM]. Read its output with bash_output." {
		t.Errorf("notice %q", n)
	}
	if got := run(testutil.Context(t), l.kill, call(a, taskArgs(id))); got.IsError || got.Text != "task "+id+" had already finished" {
		t.Errorf("second kill: %q (IsError %v)", got.Text, got.IsError)
	}
	if got := run(testutil.Context(t), l.output, call(a, taskArgs(id))); got.Text != "(no new output)\n[status: killed by SIGTERM]" {
		t.Errorf("read after kill: %q", got.Text)
	}
}

func TestLocalFailedStart(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	missing := filepath.Join(a.Cwd, "gone")
	res := l.run(t, a, "true", map[string]any{"run_in_background": true, "workdir": "gone"})
	// The same text as a foreground spawn failure; the id is in the display.
	if want := "Error: workdir " + missing + " does not exist"; !res.IsError || res.Text != want {
		t.Fatalf("start: got %q (IsError %v), want %q", res.Text, res.IsError, want)
	}
	id := rawOf(t, res).TaskID
	if !regexp.MustCompile(`^bash-\d+$`).MatchString(id) {
		t.Fatalf("display task id = %q", id)
	}
	waitEnded(t, l.exec, id)
	if got := run(testutil.Context(t), l.output, call(a, taskArgs(id))); !got.IsError || got.Text != "Error: workdir "+missing+" does not exist" {
		t.Errorf("bash_output: %q (IsError %v)", got.Text, got.IsError)
	}
	if got := run(testutil.Context(t), l.kill, call(a, taskArgs(id))); got.IsError || got.Text != "task "+id+" had already finished" {
		t.Errorf("bash_kill: %q (IsError %v)", got.Text, got.IsError)
	}
}

// TestLocalNotices: an owned task's end brings exactly one notice, an
// unowned one none. Closing the executor delivers every pending end, so after
// it the channel holds everything there will ever be.
func TestLocalNotices(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	unowned := l.run(t, tools.Caller{Cwd: t.TempDir()}, "echo x", map[string]any{"run_in_background": true})
	owned := l.run(t, tools.Caller{SessionID: "A", Cwd: t.TempDir()}, "exit 5", map[string]any{"run_in_background": true})
	if unowned.IsError || owned.IsError {
		t.Fatalf("start: %q, %q", unowned.Text, owned.Text)
	}
	waitEnded(t, l.exec, rawOf(t, unowned).TaskID)
	waitEnded(t, l.exec, rawOf(t, owned).TaskID)
	if err := l.exec.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(l.notices)
	var got []string
	for n := range l.notices {
		got = append(got, n)
	}
	want := []string{"A: background bash task " + rawOf(t, owned).TaskID +
		" finished [status: completed, exit code: 5]. Read its output with bash_output."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}

func TestLocalLiveAndAbort(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	var mu sync.Mutex
	var live []string
	c := invocation{caller: tools.Caller{SessionID: "A", Cwd: t.TempDir()},
		args: bashArgs(t, "echo ready; echo warn >&2; exec sleep 100", nil)}
	c.live = func(ch tools.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		live = append(live, ch.Stream+":"+string(ch.Data))
		if strings.Contains(strings.Join(live, ""), "stdout:ready\n") && strings.Contains(strings.Join(live, ""), "stderr:warn\n") {
			cancel() // the handshake: the command is running and streaming
		}
	}
	res := run(ctx, l.bash, c)
	if !res.IsError || res.Text != "Error: command aborted" {
		t.Errorf("got %q (IsError %v), want Error: command aborted", res.Text, res.IsError)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(live, "")
	if !strings.Contains(joined, "stdout:ready\n") || !strings.Contains(joined, "stderr:warn\n") {
		t.Errorf("live output %q", live)
	}
}

// A background task that only starts a daemon (`( setsid server & )`,
// the shape of `server --daemonize`) is finished at once, and its daemon,
// in a session of its own, outlived bash_kill and the session's close.
// bash_kill's text for it stays what it was; the daemon ends all the same.
func TestLocalKillFinishedTaskEndsItsDaemon(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("a task's marker is found in Linux's /proc only")
	}
	if os.Getenv(testExecutorEnv) == "docker" {
		t.Skip("in a container the helper ends a task's session only: its daemon ends with the container, at the session's close")
	}
	l := newLocal(t, executor.Options{})
	a := tools.Caller{SessionID: "A", Cwd: t.TempDir()}
	// The shell ends once the daemon has its own session (before that it
	// is still in the task's group and ends with it).
	res := l.run(t, a, `f=$(mktemp) && ( setsid sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$f" </dev/null >/dev/null 2>&1 & ) && until [ -s "$f" ]; do sleep 0.01; done && cat "$f" && rm -f "$f"`, map[string]any{"run_in_background": true})
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	id := rawOf(t, res).TaskID
	out := l.pollOutput(t, a, id, func(all string) bool { return strings.Contains(all, "[status: completed, exit code: 0]") })
	pid := regexp.MustCompile(`(?m)(?:^|\x00)([0-9]+)$`).FindStringSubmatch(out)[1]
	// Asked of the session's own shell (a confined command's pid is of its
	// namespace): from /proc where it shows the daemon (a zombie runs
	// nothing), else by kill -0 (Landlock alone may scope a command's
	// signals to itself, but then /proc is the host's).
	alive := func() bool {
		r := l.run(t, a, `if [ -r /proc/`+pid+`/stat ]; then s=$(sed -n 's/.*) \(.\).*/\1/p' /proc/`+pid+`/stat); [ -n "$s" ] && [ "$s" != Z ]; else kill -0 `+pid+`; fi 2>/dev/null && echo alive || echo gone`, nil)
		return r.Text == "alive\n"
	}
	// In a sandbox's PID namespace the zygote ends what carries a
	// command's marker when its shell ends: nothing outlives the task.
	endsWithShell := os.Getenv(testExecutorEnv) == "sandbox" && probe().PIDNS
	if alive() == endsWithShell {
		t.Fatalf("the daemon %s alive after its task's shell ended: %v, want %v (output %q)", pid, !endsWithShell, endsWithShell, out)
	}
	if got := run(testutil.Context(t), l.kill, call(a, taskArgs(id))); got.IsError || got.Text != "task "+id+" had already finished" {
		t.Errorf("bash_kill: %q (IsError %v)", got.Text, got.IsError)
	}
	deadline := time.Now().Add(pollDeadline)
	for alive() {
		if time.Now().After(deadline) {
			t.Fatalf("the finished task's daemon %s survives bash_kill", pid)
		}
	}
}
