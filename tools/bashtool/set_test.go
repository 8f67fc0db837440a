package bashtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

func TestWorkdir(t *testing.T) {
	t.Parallel()
	missing := errors.New("start bash: chdir /s/missing: no such file or directory")
	tests := []struct {
		name     string
		cwd      string
		workdir  any // nil = not given
		runErr   error
		wantSpec string
		// wantCwd is the cwd shown, if not wantSpec: the executor resolved it.
		wantCwd  string
		wantText string
	}{
		{name: "none uses the session cwd", cwd: "/s", wantSpec: "/s"},
		{name: "empty uses the session cwd", cwd: "/s", workdir: "", wantSpec: "/s"},
		{name: "relative joins the session cwd", cwd: "/s", workdir: "sub/dir", wantSpec: "/s/sub/dir"},
		{name: "relative parent", cwd: "/s/a", workdir: "..", wantSpec: "/s"},
		{name: "absolute kept", cwd: "/s", workdir: "/opt/x", wantSpec: "/opt/x"},
		{name: "no session cwd uses the executor default", wantSpec: "", wantCwd: fakeDefaultWorkdir},
		{name: "no session cwd passes relative as is", workdir: "rel", wantSpec: "rel"},
		{name: "missing directory", cwd: "/s", workdir: "missing", runErr: missing, wantSpec: "/s/missing",
			wantText: "Error: start bash: chdir /s/missing: no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			fake.runFn = func(_ context.Context, spec executor.Spec) (executor.Result, error) {
				return executor.Result{Workdir: resolve(spec).Workdir}, tc.runErr
			}
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			a := map[string]any{"command": "pwd", "description": "Print the directory"}
			if tc.workdir != nil {
				a["workdir"] = tc.workdir
			}
			res := run(testutil.Context(t), tb.bash, invocation{caller: tools.Caller{SessionID: "s", Cwd: tc.cwd}, args: args(t, a)})
			if got := fake.lastRun(t).Workdir; got != tc.wantSpec {
				t.Errorf("executor got workdir %q, want %q", got, tc.wantSpec)
			}
			wantCwd := tc.wantCwd
			if wantCwd == "" {
				wantCwd = tc.wantSpec
			}
			if got := rawOf(t, res).Cwd; got != wantCwd {
				t.Errorf("raw output cwd %q, want %q", got, wantCwd)
			}
			wantText := tc.wantText
			if wantText == "" {
				wantText = "(no output)"
			}
			if res.Text != wantText || res.IsError != (tc.runErr != nil) {
				t.Errorf("got %q (IsError %v), want %q", res.Text, res.IsError, wantText)
			}
		})
	}
}

func TestToolSet(t *testing.T) {
	t.Parallel()
	tb := newToolbox(t, bashtool.Options{Executor: newFake()})
	var names []string
	for _, tl := range tb.set.Tools() {
		names = append(names, tl.Name())
	}
	if diff := cmp.Diff([]string{"bash", "bash_output", "bash_kill"}, names); diff != "" {
		t.Errorf("tool order (-want +got):\n%s", diff)
	}

	type schema struct {
		Type       string                       `json:"type"`
		Properties map[string]map[string]string `json:"properties"`
		Required   []string                     `json:"required"`
	}
	tests := []struct {
		tool      tools.Tool
		wantTypes map[string]string
		required  []string
	}{
		{tool: tb.bash, wantTypes: map[string]string{"command": "string", "description": "string", "timeoutMs": "number",
			"workdir": "string", "run_in_background": "boolean"}, required: []string{"command", "description"}},
		{tool: tb.output, wantTypes: map[string]string{"task_id": "string"}, required: []string{"task_id"}},
		{tool: tb.kill, wantTypes: map[string]string{"task_id": "string"}, required: []string{"task_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.tool.Name(), func(t *testing.T) {
			t.Parallel()
			var s schema
			if err := json.Unmarshal(tc.tool.Schema(), &s); err != nil {
				t.Fatalf("schema is not JSON: %v", err)
			}
			types := map[string]string{}
			for name, p := range s.Properties {
				types[name] = p["type"]
				if p["description"] == "" {
					t.Errorf("property %q has no description", name)
				}
			}
			if s.Type != "object" || !cmp.Equal(tc.wantTypes, types) || !cmp.Equal(tc.required, s.Required) {
				t.Errorf("schema %s", tc.tool.Schema())
			}
			if tc.tool.Description() == "" {
				t.Error("empty description")
			}
		})
	}
}

func TestBashDescription(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts bashtool.Options
		want []string
	}{
		{name: "default limits", want: []string{
			"defaults to 120000ms (2 minutes) and cannot exceed 600000ms (10 minutes)"}},
		{name: "timeouts from the limits", opts: bashtool.Options{Limits: executor.Limits{DefaultTimeout: 30 * time.Second, MaxTimeout: time.Hour}},
			want: []string{"defaults to 30000ms (30 seconds) and cannot exceed 3600000ms (60 minutes)"}},
		{name: "model guidance", want: []string{
			"workdir instead of using cd", "[exit code: N]", "[output truncated; full output: <path>]",
			"run_in_background: true", "bash_output", "does not wake you up", "5-10 words"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Executor = newFake()
			tb := newToolbox(t, tc.opts)
			for _, w := range tc.want {
				if !strings.Contains(tb.bash.Description(), w) {
					t.Errorf("description lacks %q:\n%s", w, tb.bash.Description())
				}
			}
		})
	}
}

func TestNewWithoutExecutor(t *testing.T) {
	t.Parallel()
	if _, err := bashtool.New(bashtool.Options{}); err == nil {
		t.Error("New without an executor succeeded")
	}
}
