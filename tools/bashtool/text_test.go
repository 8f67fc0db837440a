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
	"github.com/dsh-acp/dsh-acp/internal/testutil"
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
		name string
		args string
		res  executor.Result
		want string
		raw  bashtool.RawOutput // Cwd is always "/w"
	}{
		// The examples of tool-text.md.
		{name: "example echo hello", res: executor.Result{Stdout: out("hello\n")}, want: "hello\n",
			raw: bashtool.RawOutput{ExitCode: intp(0)}},
		{name: "example true", want: "(no output)", raw: bashtool.RawOutput{ExitCode: intp(0)}},
		{name: "example out and err", res: executor.Result{Stdout: out("out\n"), Stderr: out("err\n")},
			want: "out\n[stderr]\nerr\n", raw: bashtool.RawOutput{ExitCode: intp(0)}},
		{name: "example exit 3", res: executor.Result{Stdout: out("failing\n"), ExitCode: 3},
			want: "failing\n[exit code: 3]", raw: bashtool.RawOutput{ExitCode: intp(3)}},
		{name: "example sleep timed out", args: `,"timeoutMs":100`,
			res:  executor.Result{ExitCode: -1, Signal: "SIGTERM", TimedOut: true, Timeout: 100 * time.Millisecond},
			want: "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]",
			raw:  bashtool.RawOutput{Signal: "SIGTERM", TimedOut: true}},
		{name: "example no trailing newlines", res: executor.Result{Stdout: out("out"), Stderr: out("err")},
			want: "out\n[stderr]\nerr", raw: bashtool.RawOutput{ExitCode: intp(0)}},

		// Markers alone and together.
		{name: "exit code without output", res: executor.Result{ExitCode: 1}, want: "(no output)\n[exit code: 1]",
			raw: bashtool.RawOutput{ExitCode: intp(1)}},
		{name: "signal without output", res: executor.Result{ExitCode: -1, Signal: "SIGKILL"},
			want: "(no output)\n[killed by signal: SIGKILL]", raw: bashtool.RawOutput{Signal: "SIGKILL"}},
		{name: "timed out but exited 0", res: executor.Result{Stdout: out("bye"), TimedOut: true, Timeout: 250 * time.Millisecond},
			want: "bye\n[timed out after 250ms]", raw: bashtool.RawOutput{ExitCode: intp(0), TimedOut: true}},
		{name: "timed out with exit code", res: executor.Result{Stdout: out("x\n"), ExitCode: 143, TimedOut: true, Timeout: time.Second},
			want: "x\n[timed out after 1000ms]\n[exit code: 143]", raw: bashtool.RawOutput{ExitCode: intp(143), TimedOut: true}},
		{name: "timeout from spec when result has none", args: `,"timeoutMs":42`,
			res:  executor.Result{TimedOut: true, ExitCode: -1, Signal: "SIGKILL"},
			want: "(no output)\n[timed out after 42ms]\n[killed by signal: SIGKILL]", raw: bashtool.RawOutput{Signal: "SIGKILL", TimedOut: true}},
		{name: "signal wins over exit code", res: executor.Result{Stdout: out("a\n"), ExitCode: 2, Signal: "SIGINT"},
			want: "a\n[killed by signal: SIGINT]", raw: bashtool.RawOutput{Signal: "SIGINT"}},
		{name: "marker after stderr without newline", res: executor.Result{Stderr: out("boom"), ExitCode: 1},
			want: "[stderr]\nboom\n[exit code: 1]", raw: bashtool.RawOutput{ExitCode: intp(1)}},
		{name: "marker after stderr with newline", res: executor.Result{Stderr: out("boom\n"), ExitCode: 1},
			want: "[stderr]\nboom\n[exit code: 1]", raw: bashtool.RawOutput{ExitCode: intp(1)}},

		// Separator rules.
		{name: "stderr only", res: executor.Result{Stderr: out("err\n")}, want: "[stderr]\nerr\n",
			raw: bashtool.RawOutput{ExitCode: intp(0)}},
		{name: "stdout only without newline", res: executor.Result{Stdout: out("abc")}, want: "abc",
			raw: bashtool.RawOutput{ExitCode: intp(0)}},
		{name: "stdout with newline then stderr", res: executor.Result{Stdout: out("a\n"), Stderr: out("b")},
			want: "a\n[stderr]\nb", raw: bashtool.RawOutput{ExitCode: intp(0)}},

		// Truncation notes.
		{name: "stdout truncated", res: executor.Result{Stdout: cut("tail", "/spill/out")},
			want: "tail\n[output truncated; full output: /spill/out]",
			raw:  bashtool.RawOutput{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "stdout truncated with trailing newline", res: executor.Result{Stdout: cut("tail\n", "/spill/out")},
			want: "tail\n\n[output truncated; full output: /spill/out]",
			raw:  bashtool.RawOutput{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "stdout truncated spill unavailable", res: executor.Result{Stdout: cut("tail", "")},
			want: "tail\n[output truncated; full output: (unavailable)]",
			raw:  bashtool.RawOutput{ExitCode: intp(0), Truncated: true}},
		{name: "stderr truncated", res: executor.Result{Stdout: out("o\n"), Stderr: cut("e", "/spill/err")},
			want: "o\n[stderr]\ne\n[output truncated; full output: /spill/err]",
			raw:  bashtool.RawOutput{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/err"}}},
		{name: "both truncated with exit code and timeout",
			res: executor.Result{Stdout: cut("o", "/spill/out"), Stderr: cut("e", ""), ExitCode: 7, TimedOut: true, Timeout: 5 * time.Second},
			want: "o\n[output truncated; full output: /spill/out]\n[stderr]\ne\n[output truncated; full output: (unavailable)]\n" +
				"[timed out after 5000ms]\n[exit code: 7]",
			raw: bashtool.RawOutput{ExitCode: intp(7), TimedOut: true, Truncated: true, SpillPaths: []string{"/spill/out"}}},
		{name: "utf-8 tail at the cut passes through", res: executor.Result{Stdout: cut("é世界\n", "/spill/out")},
			want: "é世界\n\n[output truncated; full output: /spill/out]",
			raw:  bashtool.RawOutput{ExitCode: intp(0), Truncated: true, SpillPaths: []string{"/spill/out"}}},
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
			res := run(testutil.Context(t), tb.bash, call(tools.Caller{SessionID: "s", Cwd: "/w"}, `{"command":"c","description":"Run c"`+tc.args+`}`))
			if res.IsError {
				t.Errorf("IsError = true, want false (text %q)", res.Text)
			}
			if diff := cmp.Diff(tc.want, res.Text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(res.Text) {
				t.Errorf("text is not valid UTF-8: %q", res.Text)
			}
			want := tc.raw
			want.Cwd = "/w"
			if diff := cmp.Diff(want, res.Raw); diff != "" {
				t.Errorf("raw output (-want +got):\n%s", diff)
			}
			// The notes are the marker lines a terminal cannot show, exactly
			// as the text has them and in its order.
			var wantNotes []string
			for _, line := range strings.Split(res.Text, "\n") {
				if strings.HasPrefix(line, "[timed out after ") || strings.HasPrefix(line, "[output truncated; full output: ") {
					wantNotes = append(wantNotes, line)
				}
			}
			if diff := cmp.Diff(wantNotes, res.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			wantFailed := (want.ExitCode != nil && *want.ExitCode != 0) || want.Signal != "" || want.TimedOut
			if res.Failed != wantFailed {
				t.Errorf("Failed = %v, want %v", res.Failed, wantFailed)
			}
			if diff := cmp.Diff(&tools.Exit{Code: want.ExitCode, Signal: want.Signal}, res.Exit); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
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
			res := run(testutil.Context(t), tb.bash, call(tools.Caller{SessionID: "s", Cwd: "/w"}, `{"command":"c","description":"d"}`))
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
	ctx, cancel := context.WithCancel(testutil.Context(t))
	cancel()
	res := run(ctx, tb.bash, call(tools.Caller{}, `{"command":"sleep 9","description":"d"}`))
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
		spec.Observe(executor.Stdout, []byte("out"), "")
		spec.Observe(executor.Stderr, []byte("err"), "/spill/run-stderr-1.log")
		return executor.Result{Stdout: executor.Output{Text: "out"}, Stderr: executor.Output{Text: "err"}}, nil
	}
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	var mu sync.Mutex
	var got []string
	c := call(tools.Caller{}, `{"command":"c","description":"d"}`)
	c.live = func(ch tools.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ch.Stream+":"+string(ch.Data)+":"+ch.FullOutput)
	}
	res := run(testutil.Context(t), tb.bash, c)
	if res.IsError {
		t.Fatalf("Run: %s", res.Text)
	}
	if diff := cmp.Diff([]string{"stdout:out:", "stderr:err:/spill/run-stderr-1.log"}, got); diff != "" {
		t.Errorf("live chunks (-want +got):\n%s", diff)
	}
}

func TestBashWithoutLiveHasNoObserver(t *testing.T) {
	t.Parallel()
	fake := newFake()
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	run(testutil.Context(t), tb.bash, call(tools.Caller{}, `{"command":"c","description":"d"}`))
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
		want tools.Call
	}{
		// A call that validates has the exact command line as its subject;
		// one that does not runs nothing and has none.
		{name: "one line", args: `{"command":"ls -la","description":"List files"}`,
			want: tools.Call{Title: "ls -la", Kind: "execute", Live: true, Description: "List files", Cwd: "/w", Subject: tools.Shell("ls -la")}},
		// A command of several lines shows its first and how many follow:
		// joined, the second would read as arguments of the first. The
		// whole command, every character visible, is its body.
		{name: "several lines", args: `{"command":"  cd x &&\n   make  \r\n\tmake test\n","description":"Build"}`,
			want: tools.Call{Title: "cd x && (+2 more lines)", Kind: "execute", Live: true, Description: "Build", Cwd: "/w",
				Body:    "  cd x &&\n   make  ␍\n\tmake test",
				Subject: tools.Shell("  cd x &&\n   make  \r\n\tmake test\n")}},
		{name: "the issue's two lines", args: `{"command":"echo hello\nrm -f important.txt","description":"d"}`,
			want: tools.Call{Title: "echo hello (+1 more line)", Kind: "execute", Live: true, Description: "d", Cwd: "/w",
				Body: "echo hello\nrm -f important.txt", Subject: tools.Shell("echo hello\nrm -f important.txt")}},
		// A carriage return, an escape sequence or a bidirectional control
		// cannot overwrite or reorder what the title shows.
		{name: "controls made visible", args: `{"command":"echo safe\rrm -rf x \u001b[2K\u202e","description":"d"}`,
			want: tools.Call{Title: "echo safe␍rm -rf x ␛[2K⟨U+202E⟩", Kind: "execute", Live: true, Description: "d", Cwd: "/w",
				Subject: tools.Shell("echo safe\rrm -rf x \x1b[2K\u202e")}},
		{name: "tabs become spaces", args: `{"command":"printf 'a\tb'","description":"d"}`,
			want: tools.Call{Title: "printf 'a b'", Kind: "execute", Live: true, Description: "d", Cwd: "/w", Subject: tools.Shell("printf 'a\tb'")}},
		{name: "long command shortened", args: fmt.Sprintf(`{"command":%q}`, long),
			want: tools.Call{Title: string([]rune(long)[:499]) + "…", Kind: "execute", Live: true, Cwd: "/w", Body: long}},
		{name: "long command shortened, whole subject", args: fmt.Sprintf(`{"command":%q,"description":"d"}`, long),
			want: tools.Call{Title: string([]rune(long)[:499]) + "…", Kind: "execute", Live: true, Description: "d", Cwd: "/w", Subject: tools.Shell(long), Body: long}},
		{name: "workdir shown", args: `{"command":"pwd","workdir":"sub"}`,
			want: tools.Call{Title: "pwd", Kind: "execute", Live: true, Cwd: "/w/sub"}},
		{name: "background start is not live", args: `{"command":"serve","run_in_background":true}`,
			want: tools.Call{Title: "serve", Kind: "execute", Cwd: "/w"}},
		{name: "background start is asked", args: `{"command":"serve","description":"d","run_in_background":true}`,
			want: tools.Call{Title: "serve", Kind: "execute", Description: "d", Cwd: "/w", Subject: tools.Shell("serve")}},
		{name: "the exact key is read", args: `{"command":"rm -f x","description":"d","Command":"true"}`,
			want: tools.Call{Title: "rm -f x", Kind: "execute", Live: true, Description: "d", Cwd: "/w", Subject: tools.Shell("rm -f x")}},
		{name: "bad timeout has no subject", args: `{"command":"ls","description":"d","timeoutMs":-1}`,
			want: tools.Call{Title: "ls", Kind: "execute", Live: true, Description: "d", Cwd: "/w"}},
		{name: "malformed json", args: `{"command":"ls`, want: tools.Call{Title: "bash", Kind: "execute"}},
		{name: "not an object", args: `[1,2]`, want: tools.Call{Title: "bash", Kind: "execute"}},
		{name: "command of the wrong type", args: `{"command":5}`, want: tools.Call{Title: "bash", Kind: "execute", Live: true, Cwd: "/w"}},
		{name: "blank command", args: `{"command":" \n "}`, want: tools.Call{Title: "bash", Kind: "execute", Live: true, Cwd: "/w"}},
		{name: "blank command has no subject", args: `{"command":" \n ","description":"d"}`,
			want: tools.Call{Title: "bash", Kind: "execute", Live: true, Description: "d", Cwd: "/w"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := newToolbox(t, bashtool.Options{Executor: newFake()})
			p := tb.bash.Prepare(tools.Caller{SessionID: "s", Cwd: "/w"}, []byte(tc.args))
			got := p.Call
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Prepare (-want +got):\n%s", diff)
			}
			// Answered unrun, the call says where it would have run.
			skipped := p.Skipped("Error: permission denied")
			if diff := cmp.Diff(bashtool.RawOutput{Cwd: tc.want.Cwd, IsError: true}, skipped.Raw); diff != "" || !skipped.IsError {
				t.Errorf("skipped: IsError %v, raw output (-want +got):\n%s", skipped.IsError, diff)
			}
			if n := utf8.RuneCountInString(got.Title); n > 500 {
				t.Errorf("title has %d runes, want at most 500", n)
			}
		})
	}
}
