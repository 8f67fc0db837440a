package bashtool_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

var (
	sessionA = tools.Caller{SessionID: "A", Cwd: "/a"}
	sessionB = tools.Caller{SessionID: "B", Cwd: "/b"}
	noCaller = tools.Caller{}
)

// startTask starts a background task as caller and returns its id.
func startTask(t *testing.T, tb *toolbox, caller tools.Caller, command string) string {
	t.Helper()
	res := run(testutil.Context(t), tb.bash, call(caller, string(args(t, map[string]any{
		"command": command, "description": "Start a task", "run_in_background": true,
	}))))
	if res.IsError {
		t.Fatalf("start %q: %s", command, res.Text)
	}
	id := rawOf(t, res).TaskID
	if id == "" || res.Text != "started background task "+id {
		t.Fatalf("start %q: text %q, task id %q", command, res.Text, id)
	}
	return id
}

func TestOwnershipMatrix(t *testing.T) {
	t.Parallel()
	callers := []struct {
		name   string
		caller tools.Caller
	}{{"owner", sessionA}, {"other session", sessionB}, {"no session", noCaller}}
	tasks := []struct {
		name  string
		owner tools.Caller
	}{{"owned task", sessionA}, {"unowned task", noCaller}}
	for _, task := range tasks {
		for _, c := range callers {
			for _, ended := range []bool{false, true} {
				for _, tool := range []string{"bash_output", "bash_kill"} {
					name := task.name + "/" + c.name + "/" + tool
					if ended {
						name += "/after end"
					}
					allowed := task.owner.SessionID == "" || task.owner.SessionID == c.caller.SessionID
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						fake := newFake()
						tb := newToolbox(t, bashtool.Options{Executor: fake})
						id := startTask(t, tb, task.owner, "serve")
						if ended {
							fake.finish(id, executor.Status{State: executor.Completed})
						}
						var res tools.Result
						var want string
						if tool == "bash_output" {
							res = run(testutil.Context(t), tb.output, call(c.caller, taskArgs(id)))
							want = "(no new output)\n[status: running]"
							if ended {
								want = "(no new output)\n[status: completed, exit code: 0]"
							}
						} else {
							res = run(testutil.Context(t), tb.kill, call(c.caller, taskArgs(id)))
							want = "killed background task " + id
							if ended {
								want = "task " + id + " had already finished"
							}
						}
						_, _, reads, kills := fake.counts()
						if !allowed {
							want = "Error: task " + id + " belongs to another session"
							if reads+kills != 0 {
								t.Errorf("task touched before the ownership check: %d reads, %d kills", reads, kills)
							}
						}
						if res.Text != want || res.IsError == allowed {
							t.Errorf("got %q (IsError %v), want %q", res.Text, res.IsError, want)
						}
					})
				}
			}
		}
	}
}

func TestTaskToolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns the task id to address.
		setup func(t *testing.T, fake *fakeExec, tb *toolbox) string
		want  string
	}{
		{name: "unknown id", setup: func(*testing.T, *fakeExec, *toolbox) string { return "bash-99" },
			want: `Error: unknown bash task "bash-99"`},
		{name: "id that is not a task name", setup: func(*testing.T, *fakeExec, *toolbox) string { return `x"y` },
			want: `Error: unknown bash task "x\"y"`},
	}
	for _, tc := range tests {
		for _, tool := range []string{"bash_output", "bash_kill"} {
			t.Run(tc.name+"/"+tool, func(t *testing.T) {
				t.Parallel()
				fake := newFake()
				tb := newToolbox(t, bashtool.Options{Executor: fake})
				id := tc.setup(t, fake, tb)
				tl := tb.output
				if tool == "bash_kill" {
					tl = tb.kill
				}
				res := run(testutil.Context(t), tl, call(sessionA, string(args(t, map[string]any{"task_id": id}))))
				if !res.IsError || res.Text != tc.want {
					t.Errorf("got %q (IsError %v), want %q as an error", res.Text, res.IsError, tc.want)
				}
			})
		}
	}
}

// TestFailedStart: a background command that cannot start is an error at
// once; afterwards bash_output repeats the spawn error and bash_kill calls
// the task finished. No notice follows.
func TestFailedStart(t *testing.T) {
	t.Parallel()
	fake := newFake()
	fake.startErr = errors.New("workdir /a/gone does not exist")
	var log noticeLog
	tb := newToolbox(t, bashtool.Options{Executor: fake, Notify: log.notify})
	res := run(testutil.Context(t), tb.bash, call(sessionA, `{"command":"x","description":"d","run_in_background":true}`))
	if !res.IsError || res.Text != "Error: workdir /a/gone does not exist" || rawOf(t, res).TaskID != "bash-1" {
		t.Fatalf("start: got %q (IsError %v, TaskID %q)", res.Text, res.IsError, rawOf(t, res).TaskID)
	}
	steps := []struct {
		tool    tools.Tool
		caller  tools.Caller
		want    string
		isError bool
	}{
		{tool: tb.output, caller: sessionA, want: "Error: workdir /a/gone does not exist", isError: true},
		{tool: tb.output, caller: sessionB, want: "Error: task bash-1 belongs to another session", isError: true},
		{tool: tb.kill, caller: sessionA, want: "task bash-1 had already finished"},
		{tool: tb.kill, caller: noCaller, want: "Error: task bash-1 belongs to another session", isError: true},
	}
	for i, s := range steps {
		res := run(testutil.Context(t), s.tool, call(s.caller, taskArgs("bash-1")))
		if res.Text != s.want || res.IsError != s.isError {
			t.Errorf("step %d (%s): got %q (IsError %v), want %q (IsError %v)", i, s.tool.Name(), res.Text, res.IsError, s.want, s.isError)
		}
	}
	if got := log.all(); len(got) != 0 {
		t.Errorf("notices for a task that never started: %q", got)
	}
}

func TestBackgroundReads(t *testing.T) {
	t.Parallel()
	type step struct {
		do   func(fake *fakeExec, id string)
		want string
	}
	emit := func(s executor.Stream, text string) func(*fakeExec, string) {
		return func(f *fakeExec, id string) { f.emit(id, s, text) }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "incremental", steps: []step{
			{do: emit(executor.Stdout, "first\n"), want: "first\n\n[status: running]"},
			{do: emit(executor.Stdout, "second\n"), want: "second\n\n[status: running]"},
			{want: "(no new output)\n[status: running]"},
			{do: func(f *fakeExec, id string) { f.finish(id, executor.Status{State: executor.Completed, ExitCode: 3}) },
				want: "(no new output)\n[status: completed, exit code: 3]"},
		}},
		{name: "stderr after stdout without newline", steps: []step{
			{do: func(f *fakeExec, id string) { f.emit(id, executor.Stdout, "a"); f.emit(id, executor.Stderr, "b\n") },
				want: "a\n[stderr]\nb\n\n[status: running]"},
		}},
		{name: "stderr after stdout with newline", steps: []step{
			{do: func(f *fakeExec, id string) { f.emit(id, executor.Stdout, "a\n"); f.emit(id, executor.Stderr, "b") },
				want: "a\n[stderr]\nb\n[status: running]"},
		}},
		{name: "stderr only", steps: []step{
			{do: emit(executor.Stderr, "warn"), want: "[stderr]\nwarn\n[status: running]"},
		}},
		{name: "lossy stdout", steps: []step{
			{do: func(f *fakeExec, id string) {
				f.drop(id, executor.Stdout, 4096, "/spill/bash-1.out")
				f.emit(id, executor.Stdout, "tail")
			}, want: "tail\n[some output was dropped from memory; full output: /spill/bash-1.out, (unavailable)]\n[status: running]"},
			{do: emit(executor.Stdout, "more"), want: "more\n[status: running]"},
		}},
		{name: "lossy both streams", steps: []step{
			{do: func(f *fakeExec, id string) {
				f.drop(id, executor.Stdout, 1, "/spill/o")
				f.drop(id, executor.Stderr, 1, "/spill/e")
				f.emit(id, executor.Stdout, "o\n")
				f.emit(id, executor.Stderr, "e\n")
			}, want: "o\n[stderr]\ne\n\n[some output was dropped from memory; full output: /spill/o, /spill/e]\n[status: running]"},
		}},
		{name: "everything unread was dropped", steps: []step{
			{do: func(f *fakeExec, id string) { f.drop(id, executor.Stderr, 10, "") },
				want: "[some output was dropped from memory; full output: (unavailable), (unavailable)]\n[status: running]"},
		}},
		{name: "killed by a signal", steps: []step{
			{do: func(f *fakeExec, id string) {
				f.emit(id, executor.Stdout, "bye")
				f.finish(id, executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGKILL"})
			}, want: "bye\n[status: killed by SIGKILL]"},
		}},
		{name: "killed without a known signal", steps: []step{
			{do: func(f *fakeExec, id string) { f.finish(id, executor.Status{State: executor.Killed}) },
				want: "(no new output)\n[status: killed]"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			tb := newToolbox(t, bashtool.Options{Executor: fake})
			id := startTask(t, tb, sessionA, "serve")
			for i, s := range tc.steps {
				if s.do != nil {
					s.do(fake, id)
				}
				res := run(testutil.Context(t), tb.output, call(sessionA, taskArgs(id)))
				if res.IsError {
					t.Fatalf("step %d: error %q", i, res.Text)
				}
				if diff := cmp.Diff(s.want, res.Text); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestKillTwice(t *testing.T) {
	t.Parallel()
	fake := newFake()
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	id := startTask(t, tb, sessionA, "sleep 100")
	for i, want := range []string{"killed background task " + id, "task " + id + " had already finished"} {
		res := run(testutil.Context(t), tb.kill, call(sessionA, taskArgs(id)))
		if res.IsError || res.Text != want {
			t.Errorf("kill %d: got %q (IsError %v), want %q", i+1, res.Text, res.IsError, want)
		}
		if raw := rawOf(t, res); raw.Signal != "SIGTERM" || raw.TaskID != id || !res.Failed {
			t.Errorf("kill %d: raw output %+v, failed %v; want SIGTERM, %s, failed", i+1, raw, res.Failed, id)
		}
	}
	res := run(testutil.Context(t), tb.output, call(sessionA, taskArgs(id)))
	if want := "(no new output)\n[status: killed by SIGTERM]"; res.Text != want {
		t.Errorf("output after kill: got %q, want %q", res.Text, want)
	}
}

func TestBackgroundStartSpec(t *testing.T) {
	t.Parallel()
	fake := newFake()
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	c := call(sessionA, `{"command":"serve","description":"d","workdir":"web","run_in_background":true}`)
	c.live = func(tools.Chunk) { t.Error("a background task streamed into the call's Live func") }
	res := run(testutil.Context(t), tb.bash, c)
	if res.IsError {
		t.Fatalf("start: %s", res.Text)
	}
	fake.mu.Lock()
	spec := fake.starts[0]
	fake.mu.Unlock()
	if spec.Command != "serve" || spec.Workdir != "/a/web" || spec.Owner != "A" || spec.Observe != nil {
		t.Errorf("spec = %+v", spec)
	}
	want := bashtool.RawOutput{Cwd: "/a/web", TaskID: "bash-1"}
	if diff := cmp.Diff(want, res.Raw); diff != "" {
		t.Errorf("raw output (-want +got):\n%s", diff)
	}
	if res.Failed || res.Exit != nil || len(res.Notes) != 0 {
		t.Errorf("a started task reads failed %v, exit %+v, notes %q", res.Failed, res.Exit, res.Notes)
	}
}

func TestTaskToolDisplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool int // 1 bash_output, 2 bash_kill
		args string
		want tools.Call
		// wantSkipped is the raw output of the call answered unrun.
		wantSkipped bashtool.RawOutput
	}{
		{name: "output", tool: 1, args: `{"task_id":"bash-7"}`,
			want:        tools.Call{Title: "Read output from background task bash-7", Kind: "read"},
			wantSkipped: bashtool.RawOutput{TaskID: "bash-7", IsError: true}},
		{name: "output malformed", tool: 1, args: `{"task_id":`,
			want: tools.Call{Title: "Read output from background task", Kind: "read"}, wantSkipped: bashtool.RawOutput{IsError: true}},
		{name: "kill", tool: 2, args: `{"task_id":"bash-7"}`,
			want:        tools.Call{Title: "Kill background task bash-7", Kind: "other"},
			wantSkipped: bashtool.RawOutput{TaskID: "bash-7", IsError: true}},
		{name: "kill wrong type", tool: 2, args: `{"task_id":7}`,
			want: tools.Call{Title: "Kill background task", Kind: "other"}, wantSkipped: bashtool.RawOutput{IsError: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := newToolbox(t, bashtool.Options{Executor: newFake()})
			tl := []tools.Tool{tb.bash, tb.output, tb.kill}[tc.tool]
			p := tl.Prepare(sessionA, []byte(tc.args))
			// The task tools never need approval: no subject.
			if diff := cmp.Diff(tc.want, p.Call); diff != "" {
				t.Errorf("Prepare (-want +got):\n%s", diff)
			}
			got := p.Skipped("Error: command aborted")
			if !got.IsError || got.Text != "Error: command aborted" {
				t.Errorf("skipped = %q (IsError %v)", got.Text, got.IsError)
			}
			if diff := cmp.Diff(tc.wantSkipped, got.Raw); diff != "" {
				t.Errorf("skipped raw output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputDisplay(t *testing.T) {
	t.Parallel()
	fake := newFake()
	tb := newToolbox(t, bashtool.Options{Executor: fake})
	id := startTask(t, tb, sessionA, "serve")
	fake.drop(id, executor.Stdout, 9, "/spill/o")
	fake.finish(id, executor.Status{State: executor.Completed, ExitCode: 2})
	res := run(testutil.Context(t), tb.output, call(sessionA, taskArgs(id)))
	want := bashtool.RawOutput{Cwd: "/a", ExitCode: intp(2), Truncated: true, SpillPaths: []string{"/spill/o"}, TaskID: id}
	if diff := cmp.Diff(want, res.Raw); diff != "" {
		t.Errorf("raw output (-want +got):\n%s", diff)
	}
	if !res.Failed || res.IsError {
		t.Errorf("a read of a task that exited 2: failed %v, IsError %v; want failed, not an error", res.Failed, res.IsError)
	}
}

// noticeLog collects completion notices.
type noticeLog struct {
	mu  sync.Mutex
	got []string
}

func (n *noticeLog) notify(session, text string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, session+": "+text)
}

func (n *noticeLog) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

func TestCompletionNotices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		caller tools.Caller
		status executor.Status
		want   []string
	}{
		{name: "owned completed", caller: sessionA, status: executor.Status{State: executor.Completed},
			want: []string{"A: background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output."}},
		{name: "owned failed exit", caller: sessionB, status: executor.Status{State: executor.Completed, ExitCode: 1},
			want: []string{"B: background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output."}},
		{name: "owned killed", caller: sessionA, status: executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGTERM"},
			want: []string{"A: background bash task bash-1 finished [status: killed by SIGTERM]. Read its output with bash_output."}},
		{name: "owned killed without signal", caller: sessionA, status: executor.Status{State: executor.Killed},
			want: []string{"A: background bash task bash-1 finished [status: killed]. Read its output with bash_output."}},
		{name: "unowned", caller: noCaller, status: executor.Status{State: executor.Completed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFake()
			var log noticeLog
			tb := newToolbox(t, bashtool.Options{Executor: fake, Notify: log.notify})
			id := startTask(t, tb, tc.caller, "job")
			fake.finish(id, tc.status)
			if diff := cmp.Diff(tc.want, log.all()); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloseUnsubscribes(t *testing.T) {
	t.Parallel()
	fake := newFake()
	var log noticeLog
	tb := newToolbox(t, bashtool.Options{Executor: fake, Notify: log.notify})
	id := startTask(t, tb, sessionA, "job")
	if n := fake.subscribers(); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	for range 2 { // Close is idempotent
		if err := tb.set.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := fake.subscribers(); n != 0 {
		t.Errorf("%d subscribers after Close, want 0", n)
	}
	fake.finish(id, executor.Status{State: executor.Completed})
	if got := log.all(); len(got) != 0 {
		t.Errorf("notices after Close: %q", got)
	}
}

func TestNoSubscriptionWithoutNotify(t *testing.T) {
	t.Parallel()
	fake := newFake()
	newToolbox(t, bashtool.Options{Executor: fake})
	if n := fake.subscribers(); n != 0 {
		t.Errorf("%d subscribers without Notify, want 0", n)
	}
}
