package bashtool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

func intp(n int) *int { return &n }

func TestBashResultText(t *testing.T) {
	t.Parallel()
	out := func(s string) executor.Output { return executor.Output{Text: s, Bytes: int64(len(s))} }
	cut := func(s, spill string) executor.Output {
		return executor.Output{Text: s, Truncated: true, SpillPath: spill, Bytes: 1 << 20}
	}
	tests := []struct {
		name    string
		args    string
		res     executor.Result
		want    string
		display tools.Display // only the result fields are compared
	}{
		// The examples of tool-text.md.
		{name: "example echo hello", res: executor.Result{Stdout: out("hello\n")}, want: "hello\n",
			display: tools.Display{ExitCode: intp(0)}},
		{name: "example true", want: "(no output)", display: tools.Display{ExitCode: intp(0)}},
		{name: "example out and err", res: executor.Result{Stdout: out("out\n"), Stderr: out("err\n")},
			want: "out\n[stderr]\nerr\n", display: tools.Display{ExitCode: intp(0)}},
		{name: "example exit 3", res: executor.Result{Stdout: out("failing\n"), ExitCode: 3},
			want: "failing\n[exit code: 3]", display: tools.Display{ExitCode: intp(3)}},
		{name: "example sleep timed out", args: `,"timeoutMs":100`,
			res:     executor.Result{ExitCode: -1, Signal: "SIGTERM", TimedOut: true, Timeout: 100 * time.Millisecond},
			want:    "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]",
			display: tools.Display{Signal: "SIGTERM", TimedOut: true}},
		{name: "example no trailing newlines", res: executor.Result{Stdout: out("out"), Stderr: out("err")},
			want: "out\n[stderr]\nerr", display: tools.Display{ExitCode: intp(0)}},

		// Markers alone and together.
		{name: "exit code without output", res: executor.Result{ExitCode: 1}, want: "(no output)\n[exit code: 1]",
			display: tools.Display{ExitCode: intp(1)}},
		{name: "signal without output", res: executor.Result{ExitCode: -1, Signal: "SIGKILL"},
			want: "(no output)\n[killed by signal: SIGKILL]", display: tools.Display{Signal: "SIGKILL"}},
		{name: "timed out but exited 0", res: executor.Result{Stdout: out("bye"), TimedOut: true, Timeout: 250 * time.Millisecond},
			want: "bye\n[timed out after 250ms]", display: tools.Display{ExitCode: intp(0), TimedOut: true}},
		{name: "timed out with exit code", res: executor.Result{Stdout: out("x\n"), ExitCode: 143, TimedOut: true, Timeout: time.Second},
			want: "x\n[timed out after 1000ms]\n[exit code: 143]", display: tools.Display{ExitCode: intp(143), TimedOut: true}},
		{name: "timeout from spec when result has none", args: `,"timeoutMs":42`,
			res:  executor.Result{TimedOut: true, ExitCode: -1, Signal: "SIGKILL"},
			want: "(no output)\n[timed out after 42ms]\n[killed by signal: SIGKILL]", display: tools.Display{Signal: "SIGKILL", TimedOut: true}},
		{name: "signal wins over exit code", res: executor.Result{Stdout: out("a\n"), ExitCode: 2, Signal: "SIGINT"},
			want: "a\n[killed by signal: SIGINT]", display: tools.Display{Signal: "SIGINT"}},
		{name: "marker after stderr without newline", res: executor.Result{Stderr: out("boom"), ExitCode: 1},
			want: "[stderr]\nboom\n[exit code: 1]", display: tools.Display{ExitCode: intp(1)}},
		{name: "marker after stderr with newline", res: executor.Result{Stderr: out("boom\n"), ExitCode: 1},
			want: "[stderr]\nboom\n[exit code: 1]", display: tools.Display{ExitCode: intp(1)}},

		// Separator rules.
		{name: "stderr only", res: executor.Result{Stderr: out("err\n")}, want: "[stderr]\nerr\n",
			display: tools.Display{ExitCode: intp(0)}},
		{name: "stdout only without newline", res: executor.Result{Stdout: out("abc")}, want: "abc",
			display: tools.Display{ExitCode: intp(0)}},
		{name: "stdout with newline then stderr", res: executor.Result{Stdout: out("a\n"), Stderr: out("b")},
			want: "a\n[stderr]\nb", display: tools.Display{ExitCode: intp(0)}},

		// Truncation notes.
		{name: "stdout truncated", res: executor.Result{Stdout: cut("tail", "/spill/out")},
			want:    "tail\n[output truncated; full output: /spill/out]",
			display: tools.Display{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "stdout truncated with trailing newline", res: executor.Result{Stdout: cut("tail\n", "/spill/out")},
			want:    "tail\n\n[output truncated; full output: /spill/out]",
			display: tools.Display{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "stdout truncated spill unavailable", res: executor.Result{Stdout: cut("tail", "")},
			want:    "tail\n[output truncated; full output: (unavailable)]",
			display: tools.Display{ExitCode: intp(0), Truncated: true}},
		{name: "stderr truncated", res: executor.Result{Stdout: out("o\n"), Stderr: cut("e", "/spill/err")},
			want:    "o\n[stderr]\ne\n[output truncated; full output: /spill/err]",
			display: tools.Display{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/err"}}},
		{name: "both truncated with exit code and timeout",
			res: executor.Result{Stdout: cut("o", "/spill/out"), Stderr: cut("e", ""), ExitCode: 7, TimedOut: true, Timeout: 5 * time.Second},
			want: "o\n[output truncated; full output: /spill/out]\n[stderr]\ne\n[output truncated; full output: (unavailable)]\n" +
				"[timed out after 5000ms]\n[exit code: 7]",
			display: tools.Display{ExitCode: intp(7), TimedOut: true, Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "utf-8 tail at the cut passes through", res: executor.Result{Stdout: cut("é世界\n", "/spill/out")},
			want:    "é世界\n\n[output truncated; full output: /spill/out]",
			display: tools.Display{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			fake.runFn = func(_ context.Context, spec executor.Spec) (executor.Result, error) {
				r := tc.res
				r.Workdir = spec.Workdir
				return r, nil
			}
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			res := tb.bash.Run(testCtx(t), call(tools.Caller{SessionID: "s", Cwd: "/w"}, `{"command":"c","description":"Run c"`+tc.args+`}`))
			if res.IsError {
				t.Errorf("IsError = true, want false (text %q)", res.Text)
			}
			if diff := cmp.Diff(tc.want, res.Text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(res.Text) {
				t.Errorf("text is not valid UTF-8: %q", res.Text)
			}
			want := tc.display
			want.Title, want.Kind, want.Description, want.Cwd, want.Live = "c", "execute", "Run c", "/w", true
			if diff := cmp.Diff(want, res.Display); diff != "" {
				t.Errorf("display (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBashInfrastructureErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "spawn failure names the directory", err: errors.New("start bash: chdir /w/missing: no such file or directory"),
			want: "Error: start bash: chdir /w/missing: no such file or directory"},
		{name: "aborted", err: fmt.Errorf("run: %w", errors.Join(executor.ErrAborted, context.Canceled)),
			want: "Error: command aborted"},
		{name: "executor closed", err: fmt.Errorf("run: %w", executor.ErrClosed), want: "Error: run: executor closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			fake.runFn = func(context.Context, executor.Spec) (executor.Result, error) { return executor.Result{}, tc.err }
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			res := tb.bash.Run(testCtx(t), call(tools.Caller{SessionID: "s", Cwd: "/w"}, `{"command":"c","description":"d"}`))
			if !res.IsError || res.Text != tc.want {
				t.Errorf("got %q (IsError %v), want %q as an error", res.Text, res.IsError, tc.want)
			}
		})
	}
}

// TestBashCancelledContext checks that a run the executor ends because the
// turn was cancelled reads as aborted even if the error does not say so.
func TestBashCancelledContext(t *testing.T) {
	t.Parallel()
	fake := newFake()
	fake.runFn = func(ctx context.Context, _ executor.Spec) (executor.Result, error) {
		<-ctx.Done()
		return executor.Result{}, fmt.Errorf("wait: %w", ctx.Err())
	}
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	res := tb.bash.Run(ctx, call(tools.Caller{}, `{"command":"sleep 9","description":"d"}`))
	if !res.IsError || res.Text != "Error: command aborted" {
		t.Errorf("got %q (IsError %v), want Error: command aborted", res.Text, res.IsError)
	}
}

func TestBashLiveOutput(t *testing.T) {
	t.Parallel()
	fake := newFake()
	fake.runFn = func(_ context.Context, spec executor.Spec) (executor.Result, error) {
		if spec.Observe == nil {
			return executor.Result{}, errors.New("no observer")
		}
		spec.Observe(executor.Stdout, []byte("out"))
		spec.Observe(executor.Stderr, []byte("err"))
		return executor.Result{Stdout: executor.Output{Text: "out"}, Stderr: executor.Output{Text: "err"}}, nil
	}
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	var mu sync.Mutex
	var got []string
	c := call(tools.Caller{}, `{"command":"c","description":"d"}`)
	c.Live = func(stream string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, stream+":"+string(p))
	}
	res := tb.bash.Run(testCtx(t), c)
	if res.IsError {
		t.Fatalf("Run: %s", res.Text)
	}
	if diff := cmp.Diff([]string{"stdout:out", "stderr:err"}, got); diff != "" {
		t.Errorf("live chunks (-want +got):\n%s", diff)
	}
}

func TestBashWithoutLiveHasNoObserver(t *testing.T) {
	t.Parallel()
	fake := newFake()
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	tb.bash.Run(testCtx(t), call(tools.Caller{}, `{"command":"c","description":"d"}`))
	if fake.lastRun(t).Observe != nil {
		t.Error("Spec.Observe set although the call has no Live func")
	}
}

func TestBashTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("echo 世界; ", 100)
	tests := []struct {
		name string
		args string
		want tools.Display
	}{
		{name: "one line", args: `{"command":"ls -la","description":"List files"}`,
			want: tools.Display{Title: "ls -la", Kind: "execute", Live: true, Description: "List files", Cwd: "/w"}},
		{name: "newlines collapsed", args: `{"command":"  cd x &&\n   make  \r\n\tmake test\n","description":"Build"}`,
			want: tools.Display{Title: "cd x && make make test", Kind: "execute", Live: true, Description: "Build", Cwd: "/w"}},
		{name: "tabs become spaces", args: `{"command":"printf 'a\tb'","description":"d"}`,
			want: tools.Display{Title: "printf 'a b'", Kind: "execute", Live: true, Description: "d", Cwd: "/w"}},
		{name: "long command shortened", args: fmt.Sprintf(`{"command":%q}`, long),
			want: tools.Display{Title: string([]rune(long)[:499]) + "…", Kind: "execute", Live: true, Cwd: "/w"}},
		{name: "workdir shown", args: `{"command":"pwd","workdir":"sub"}`,
			want: tools.Display{Title: "pwd", Kind: "execute", Live: true, Cwd: "/w/sub"}},
		{name: "background start is not live", args: `{"command":"serve","run_in_background":true}`,
			want: tools.Display{Title: "serve", Kind: "execute", Cwd: "/w"}},
		{name: "malformed json", args: `{"command":"ls`, want: tools.Display{Title: "bash", Kind: "execute"}},
		{name: "not an object", args: `[1,2]`, want: tools.Display{Title: "bash", Kind: "execute"}},
		{name: "command of the wrong type", args: `{"command":5}`, want: tools.Display{Title: "bash", Kind: "execute", Live: true, Cwd: "/w"}},
		{name: "blank command", args: `{"command":" \n "}`, want: tools.Display{Title: "bash", Kind: "execute", Live: true, Cwd: "/w"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := newToolbox(t, bashtool.Options{Executor: newFake()})
			got := tb.bash.Describe(tools.Caller{SessionID: "s", Cwd: "/w"}, []byte(tc.args))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
			if n := utf8.RuneCountInString(got.Title); n > 500 {
				t.Errorf("title has %d runes, want at most 500", n)
			}
		})
	}
}
