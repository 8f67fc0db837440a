package bashtool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string // "bash", "bash_output" or "bash_kill"
		args string
		want string
	}{
		{name: "command missing", tool: "bash", args: `{"description":"d"}`, want: `missing required property "command"`},
		{name: "command null", tool: "bash", args: `{"command":null,"description":"d"}`, want: `missing required property "command"`},
		{name: "command number", tool: "bash", args: `{"command":5,"description":"d"}`, want: `"command" must be a string`},
		{name: "command array", tool: "bash", args: `{"command":["ls"],"description":"d"}`, want: `"command" must be a string`},
		{name: "command type before description", tool: "bash", args: `{"command":true}`, want: `"command" must be a string`},
		{name: "description missing", tool: "bash", args: `{"command":"ls"}`, want: `missing required property "description"`},
		{name: "timeoutMs string", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":"100"}`, want: `"timeoutMs" must be a number`},
		{name: "workdir number", tool: "bash", args: `{"command":"ls","description":"d","workdir":1}`, want: `"workdir" must be a string`},
		{name: "run_in_background string", tool: "bash", args: `{"command":"ls","description":"d","run_in_background":"yes"}`, want: `"run_in_background" must be a boolean`},
		{name: "types before values", tool: "bash", args: `{"command":"","description":"d","workdir":false}`, want: `"workdir" must be a string`},
		{name: "command empty", tool: "bash", args: `{"command":"","description":"d"}`, want: "invalid command: expected a non-empty string"},
		{name: "command whitespace", tool: "bash", args: `{"command":" \n\t ","description":"d"}`, want: "invalid command: expected a non-empty string"},
		{name: "description empty", tool: "bash", args: `{"command":"ls","description":""}`, want: "invalid description: expected a non-empty string"},
		{name: "description whitespace", tool: "bash", args: `{"command":"ls","description":"  "}`, want: "invalid description: expected a non-empty string"},
		{name: "description number", tool: "bash", args: `{"command":"ls","description":7}`, want: "invalid description: expected a non-empty string"},
		{name: "timeoutMs zero", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":0}`, want: "invalid timeoutMs: expected a positive number, got 0"},
		{name: "timeoutMs negative", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-5}`, want: "invalid timeoutMs: expected a positive number, got -5"},
		{name: "timeoutMs negative fraction", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-1.5}`, want: "invalid timeoutMs: expected a positive number, got -1.5"},
		{name: "timeoutMs negative zero", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-0.0}`, want: "invalid timeoutMs: expected a positive number, got 0"},
		{name: "timeoutMs exponent", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-2E3}`, want: "invalid timeoutMs: expected a positive number, got -2000"},
		{name: "timeoutMs tiny negative", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-1e-7}`, want: "invalid timeoutMs: expected a positive number, got -1e-7"},
		{name: "timeoutMs huge negative", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-1e21}`, want: "invalid timeoutMs: expected a positive number, got -1e+21"},
		{name: "timeoutMs beyond float range", tool: "bash", args: `{"command":"ls","description":"d","timeoutMs":-1e999}`, want: "invalid timeoutMs: expected a positive number, got -Infinity"},
		{name: "empty arguments", tool: "bash", args: ``, want: `missing required property "command"`},
		{name: "malformed json", tool: "bash", args: `{"command":"ls`, want: "invalid arguments: expected a JSON object"},
		{name: "trailing garbage", tool: "bash", args: `{"command":"ls","description":"d"} x`, want: "invalid arguments: expected a JSON object"},
		{name: "array", tool: "bash", args: `["ls"]`, want: "invalid arguments: expected a JSON object"},
		{name: "string", tool: "bash", args: `"ls"`, want: "invalid arguments: expected a JSON object"},
		{name: "null", tool: "bash", args: `null`, want: "invalid arguments: expected a JSON object"},
		{name: "number", tool: "bash", args: `42`, want: "invalid arguments: expected a JSON object"},
		{name: "output task_id missing", tool: "bash_output", args: `{}`, want: `missing required property "task_id"`},
		{name: "output task_id number", tool: "bash_output", args: `{"task_id":1}`, want: `"task_id" must be a string`},
		{name: "output malformed", tool: "bash_output", args: `{task_id}`, want: "invalid arguments: expected a JSON object"},
		{name: "kill task_id missing", tool: "bash_kill", args: `{"id":"bash-1"}`, want: `missing required property "task_id"`},
		{name: "kill task_id object", tool: "bash_kill", args: `{"task_id":{}}`, want: `"task_id" must be a string`},
		{name: "kill not an object", tool: "bash_kill", args: `"bash-1"`, want: "invalid arguments: expected a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			tool := map[string]tools.Tool{"bash": tb.bash, "bash_output": tb.output, "bash_kill": tb.kill}[tc.tool]
			res := run(testutil.Context(t), tool, call(tools.Caller{SessionID: "s", Cwd: "/w"}, tc.args))
			if want := "Error: " + tc.want; !res.IsError || res.Text != want {
				t.Errorf("got %q (IsError %v), want %q as an error", res.Text, res.IsError, want)
			}
			if runs, starts, reads, kills := fake.counts(); runs+starts+reads+kills != 0 {
				t.Errorf("executor used on invalid arguments: %d runs, %d starts, %d reads, %d kills", runs, starts, reads, kills)
			}
		})
	}
}

func TestValidArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		args        string
		wantTimeout time.Duration
	}{
		{name: "no timeout uses the default", args: `{"command":"ls","description":"d"}`, wantTimeout: fakeDefaultTimeout},
		{name: "whole milliseconds", args: `{"command":"ls","description":"d","timeoutMs":1500}`, wantTimeout: 1500 * time.Millisecond},
		{name: "fraction rounds up", args: `{"command":"ls","description":"d","timeoutMs":1.5}`, wantTimeout: 2 * time.Millisecond},
		{name: "small fraction is not zero", args: `{"command":"ls","description":"d","timeoutMs":0.01}`, wantTimeout: time.Millisecond},
		{name: "above the maximum is clamped", args: `{"command":"ls","description":"d","timeoutMs":9000000}`, wantTimeout: fakeMaxTimeout},
		{name: "beyond float range is clamped", args: `{"command":"ls","description":"d","timeoutMs":1e999}`, wantTimeout: fakeMaxTimeout},
		{name: "null optionals are absent", args: `{"command":"ls","description":"d","timeoutMs":null,"workdir":null,"run_in_background":null}`, wantTimeout: fakeDefaultTimeout},
		{name: "unknown keys ignored", args: `{"command":"ls","description":"d","env":{"A":"1"},"stdin":"x","cwd":"/etc"}`, wantTimeout: fakeDefaultTimeout},
		{name: "background false runs in the foreground", args: `{"command":"ls","description":"d","run_in_background":false}`, wantTimeout: fakeDefaultTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			res := run(testutil.Context(t), tb.bash, call(tools.Caller{SessionID: "s", Cwd: "/w"}, tc.args))
			if res.IsError {
				t.Fatalf("Run: %s", res.Text)
			}
			// The executor resolves the spec it is given, once: the timeout
			// it applies is the default, the request or the maximum.
			spec := resolve(fake.lastRun(t))
			if spec.Command != "ls" || spec.Workdir != "/w" || spec.Owner != "s" || spec.Timeout != tc.wantTimeout {
				t.Errorf("spec = {Command:%q Workdir:%q Owner:%q Timeout:%v}, want {ls /w s %v}",
					spec.Command, spec.Workdir, spec.Owner, spec.Timeout, tc.wantTimeout)
			}
		})
	}
}

// TestTimedOutMarkerShowsEffectiveTimeout: a timeout above the maximum is
// clamped by the executor, and the marker names what was applied.
func TestTimedOutMarkerShowsEffectiveTimeout(t *testing.T) {
	t.Parallel()
	fake := newFake()
	fake.runFn = func(_ context.Context, spec executor.Spec) (executor.Result, error) {
		return executor.Result{TimedOut: true, Timeout: resolve(spec).Timeout, ExitCode: -1, Signal: "SIGTERM"}, nil
	}
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	res := run(testutil.Context(t), tb.bash, call(tools.Caller{}, `{"command":"sleep 1000","description":"d","timeoutMs":700000}`))
	if want := "(no output)\n[timed out after 600000ms]\n[killed by signal: SIGTERM]"; res.Text != want {
		t.Errorf("got %q, want %q", res.Text, want)
	}
}

// TestTimedOutMarkerFromLimits: a result that does not carry its timeout
// (an executor that does not say) is marked with the limits' reading of the
// request: the same default and maximum the executor was given.
func TestTimedOutMarkerFromLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, want string
	}{
		{name: "default", args: `{"command":"c","description":"d"}`, want: "(no output)\n[timed out after 5000ms]\n[exit code: 1]"},
		{name: "clamped", args: `{"command":"c","description":"d","timeoutMs":9000}`, want: "(no output)\n[timed out after 7000ms]\n[exit code: 1]"},
		{name: "given", args: `{"command":"c","description":"d","timeoutMs":42}`, want: "(no output)\n[timed out after 42ms]\n[exit code: 1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			fake.runFn = func(context.Context, executor.Spec) (executor.Result, error) {
				return executor.Result{TimedOut: true, ExitCode: 1}, nil
			}
			tb := newToolbox(t, bashtool.Options{Executor: fake, Limits: executor.Limits{DefaultTimeout: 5 * time.Second, MaxTimeout: 7 * time.Second}})
			res := run(testutil.Context(t), tb.bash, call(tools.Caller{}, tc.args))
			if res.Text != tc.want {
				t.Errorf("got %q, want %q", res.Text, tc.want)
			}
			if want := []string{strings.Split(tc.want, "\n")[1]}; !cmp.Equal(want, res.Notes) {
				t.Errorf("notes %q, want %q", res.Notes, want)
			}
		})
	}
}
