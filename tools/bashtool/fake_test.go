package bashtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

const (
	fakeDefaultWorkdir = "/fake/default"
	fakeDefaultTimeout = 120 * time.Second
	fakeMaxTimeout     = 600 * time.Second
)

// fakeExec is an in-memory executor: foreground results come from runFn,
// background tasks are driven by the test through emit, drop and finish.
type fakeExec struct {
	// runFn, if set, produces a foreground result; the default echoes the
	// spec's workdir and timeout in an empty result.
	runFn func(ctx context.Context, spec executor.Spec) (executor.Result, error)
	// startErr, if set, makes Start fail the way a spawn failure does.
	startErr error

	// mu guards everything below.
	mu      sync.Mutex
	runs    []executor.Spec
	starts  []executor.Spec
	reads   int
	kills   int
	next    int
	tasks   map[string]*fakeTask
	subs    map[int]func(executor.TaskEnd)
	nextSub int
}

type fakeTask struct {
	info executor.TaskInfo
	out  executor.Read
}

var _ bashtool.Executor = (*fakeExec)(nil)

func newFake() *fakeExec {
	return &fakeExec{tasks: map[string]*fakeTask{}, subs: map[int]func(executor.TaskEnd){}}
}

// resolve fills a spec as an executor does: its default workdir and timeout.
func resolve(spec executor.Spec) executor.Spec {
	if spec.Workdir == "" {
		spec.Workdir = fakeDefaultWorkdir
	}
	if spec.Timeout == 0 {
		spec.Timeout = fakeDefaultTimeout
	}
	spec.Timeout = min(spec.Timeout, fakeMaxTimeout)
	return spec
}

func (f *fakeExec) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	f.mu.Lock()
	f.runs = append(f.runs, spec)
	f.mu.Unlock()
	if f.runFn != nil {
		return f.runFn(ctx, spec)
	}
	spec = resolve(spec)
	return executor.Result{Workdir: spec.Workdir, Timeout: spec.Timeout}, nil
}

func (f *fakeExec) StartContext(_ context.Context, spec executor.Spec) (string, error) {
	f.mu.Lock()
	f.starts = append(f.starts, spec)
	f.next++
	id := fmt.Sprintf("bash-%d", f.next)
	t := &fakeTask{info: executor.TaskInfo{ID: id, Owner: spec.Owner, Command: spec.Command, Workdir: resolve(spec).Workdir}}
	f.tasks[id] = t
	f.mu.Unlock()
	if spec.Registered != nil {
		spec.Registered(id)
	}
	if f.startErr != nil {
		f.finish(id, executor.Status{State: executor.Failed, Err: f.startErr})
		return id, f.startErr
	}
	return id, nil
}

func (f *fakeExec) Info(id string) (executor.TaskInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[id]
	if !ok {
		return executor.TaskInfo{}, fmt.Errorf("info %s: %w", id, executor.ErrUnknownTask)
	}
	return t.info, nil
}

func (f *fakeExec) Read(id string) (executor.Read, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[id]
	if !ok {
		return executor.Read{}, fmt.Errorf("read %s: %w", id, executor.ErrUnknownTask)
	}
	f.reads++
	r := t.out
	r.Status = t.info.Status
	t.out = executor.Read{}
	return r, nil
}

func (f *fakeExec) Kill(id string) (executor.KillResult, error) {
	f.mu.Lock()
	t, ok := f.tasks[id]
	if !ok {
		f.mu.Unlock()
		return executor.KillResult{}, fmt.Errorf("kill %s: %w", id, executor.ErrUnknownTask)
	}
	f.kills++
	if t.info.Status.State != executor.Running {
		st := t.info.Status
		f.mu.Unlock()
		return executor.KillResult{AlreadyFinished: true, Status: st}, nil
	}
	f.mu.Unlock()
	st := executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGTERM"}
	f.finish(id, st)
	return executor.KillResult{Status: st}, nil
}

func (f *fakeExec) Subscribe(fn func(executor.TaskEnd)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nextSub
	f.nextSub++
	f.subs[n] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, n)
	}
}

// emit appends output to a task's unread chunk.
func (f *fakeExec) emit(id string, s executor.Stream, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[id]
	if s == executor.Stderr {
		t.out.Stderr.Text += text
	} else {
		t.out.Stdout.Text += text
	}
}

// drop records that n unread bytes of a stream were dropped from memory.
func (f *fakeExec) drop(id string, s executor.Stream, n int64, spill string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &f.tasks[id].out.Stdout
	if s == executor.Stderr {
		c = &f.tasks[id].out.Stderr
	}
	c.Dropped += n
	c.SpillPath = spill
}

// finish ends a task and tells subscribers, outside the lock as a real
// executor would.
func (f *fakeExec) finish(id string, st executor.Status) {
	f.mu.Lock()
	t := f.tasks[id]
	t.info.Status = st
	end := executor.TaskEnd{ID: id, Owner: t.info.Owner, Status: st}
	subs := make([]func(executor.TaskEnd), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(end)
	}
}

func (f *fakeExec) counts() (runs, starts, reads, kills int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs), len(f.starts), f.reads, f.kills
}

func (f *fakeExec) lastRun(t *testing.T) executor.Spec {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.runs) == 0 {
		t.Fatal("executor.Run was not called")
	}
	return f.runs[len(f.runs)-1]
}

func (f *fakeExec) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// toolbox is a tool set over one executor, with the tools by name.
type toolbox struct {
	set                *bashtool.Set
	bash, output, kill tools.Tool
}

func newToolbox(t *testing.T, opts bashtool.Options) *toolbox {
	t.Helper()
	set, err := bashtool.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = set.Close() })
	ts := set.Tools()
	if len(ts) != 3 {
		t.Fatalf("Tools() returned %d tools, want 3", len(ts))
	}
	return &toolbox{set: set, bash: ts[0], output: ts[1], kill: ts[2]}
}

// args marshals a map into raw JSON arguments.
func args(t *testing.T, m map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal args: %v", err)
	}
	return b
}

// invocation is one call as a test makes it.
type invocation struct {
	caller tools.Caller
	args   json.RawMessage
	// live, if set, receives the call's live output.
	live tools.Live
}

func call(caller tools.Caller, raw string) invocation {
	return invocation{caller: caller, args: json.RawMessage(raw)}
}

// run prepares and runs one call of tl, as the agent loop does.
func run(ctx context.Context, tl tools.Tool, inv invocation) tools.Result {
	return tl.Prepare(inv.caller, inv.args).Run(ctx, inv.live)
}

// rawOf is a result's raw output; a result without one fails the test.
func rawOf(t *testing.T, r tools.Result) bashtool.RawOutput {
	t.Helper()
	raw, ok := r.Raw.(bashtool.RawOutput)
	if !ok {
		t.Fatalf("raw output %#v (%T), want a bashtool.RawOutput", r.Raw, r.Raw)
	}
	return raw
}

func taskArgs(id string) string { return fmt.Sprintf(`{"task_id":%q}`, id) }
