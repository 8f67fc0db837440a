package executor_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// ends collects task ends delivered to a subscriber.
type ends struct {
	// mu guards got and changed.
	mu  sync.Mutex
	got map[string][]executor.TaskEnd
	// changed is closed (and replaced) at each end: every waiter wakes,
	// whichever task it waits for (parallel subtests share one ends, so a
	// channel of ends would hand one waiter's end to another).
	changed chan struct{}
	done    atomic.Bool // set once Close returned: no call may come after
	t       *testing.T
}

func subscribe(t *testing.T, l *executor.Local) *ends {
	e := &ends{got: map[string][]executor.TaskEnd{}, changed: make(chan struct{}), t: t}
	l.Subscribe(func(end executor.TaskEnd) {
		if e.done.Load() {
			panic("task end delivered after Close returned: " + end.ID)
		}
		e.mu.Lock()
		e.got[end.ID] = append(e.got[end.ID], end)
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
	})
	return e
}

// wait returns the end of task id.
func (e *ends) wait(ctx context.Context, id string) executor.TaskEnd {
	e.t.Helper()
	for {
		e.mu.Lock()
		got, changed := e.got[id], e.changed
		e.mu.Unlock()
		if len(got) > 0 {
			return got[0]
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e.t.Fatalf("no end for %s", id)
		}
	}
}

// readUntil reads a task's stdout until it contains want; returns all of it.
func readUntil(ctx context.Context, t *testing.T, l *executor.Local, id, want string) string {
	t.Helper()
	var all strings.Builder
	waitUntil(ctx, t, id+" printing "+want, func() bool {
		r, err := l.Read(id)
		if err != nil {
			t.Fatalf("Read %s: %v", id, err)
		}
		all.WriteString(r.Stdout.Text)
		return strings.Contains(all.String(), want)
	})
	return all.String()
}

func TestStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := newLocal(t, executor.Options{DefaultWorkdir: dir})
	e := subscribe(t, l)
	ctx := testutil.Context(t)

	id1, err := l.Start(executor.Spec{Command: "exit 3", Owner: "s1", Timeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := l.Start(executor.Spec{Command: "echo two", Workdir: "sub"})
	if id1 != "bash-1" || id2 != "bash-2" {
		t.Fatalf("ids %q %q, want bash-1 bash-2", id1, id2)
	}
	if err == nil || !strings.Contains(err.Error(), "workdir "+filepath.Join(dir, "sub")+" does not exist") {
		t.Fatalf("Start in a missing relative workdir: %v", err)
	}

	end := e.wait(ctx, id1)
	want := executor.TaskEnd{ID: "bash-1", Owner: "s1", Status: executor.Status{State: executor.Completed, ExitCode: 3}}
	if d := cmp.Diff(want, end); d != "" {
		t.Errorf("end (-want +got):\n%s", d)
	}
	info, err := l.Info(id1)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(info.Started) > time.Minute || info.Started.After(time.Now()) {
		t.Errorf("started %v, want just now", info.Started)
	}
	wantInfo := executor.TaskInfo{ID: "bash-1", Owner: "s1", Command: "exit 3", Workdir: dir, Status: want.Status, Started: info.Started}
	if d := cmp.Diff(wantInfo, info); d != "" {
		t.Errorf("info (-want +got):\n%s", d)
	}
	if end := e.wait(ctx, id2); end.Status.State != executor.Failed || end.Status.Err == nil {
		t.Errorf("end of a task that could not start: %+v", end)
	}
}

func TestStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  string
		want executor.Status
	}{
		{"completed", "true", executor.Status{State: executor.Completed}},
		{"completed non-zero", "exit 4", executor.Status{State: executor.Completed, ExitCode: 4}},
		{"killed by another's signal", "kill -KILL $$", executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGKILL"}},
	}
	l := newLocal(t, executor.Options{})
	e := subscribe(t, l)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := l.Start(executor.Spec{Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			end := e.wait(testutil.Context(t), id)
			if d := cmp.Diff(tc.want, end.Status); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			r, err := l.Read(id)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, r.Status); d != "" {
				t.Errorf("read status (-want +got):\n%s", d)
			}
		})
	}
}

// Two reads return disjoint, consecutive output.
func TestReadIncremental(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := newLocal(t, executor.Options{DefaultWorkdir: dir})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	id, err := l.Start(executor.Spec{Command: `echo one; until [ -e go1 ]; do sleep 0.01; done; echo two; printf 'é' | head -c1; until [ -e go2 ]; do sleep 0.01; done; printf 'é' | tail -c1; echo; echo three >&2`})
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	read := func() executor.Read {
		r, err := l.Read(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Stdout.Text != "" {
			reads = append(reads, r.Stdout.Text)
		}
		return r
	}
	waitUntil(ctx, t, "one", func() bool { read(); return strings.Join(reads, "") == "one\n" })
	if r := read(); r.Stdout.Text != "" || r.Status.State != executor.Running {
		t.Fatalf("read with nothing new = %+v", r)
	}
	if err := os.WriteFile(filepath.Join(dir, "go1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Half of "é" printed: it is held back until the rest arrives.
	waitUntil(ctx, t, "two", func() bool { read(); return strings.Join(reads, "") == "one\ntwo\n" })
	if err := os.WriteFile(filepath.Join(dir, "go2"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.wait(ctx, id)
	r := read()
	if d := cmp.Diff([]string{"one\n", "two\n", "é\n"}, reads); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
	if r.Stderr.Text != "three\n" || r.Status.State != executor.Completed || r.Stdout.Dropped != 0 || r.Stdout.SpillPath != "" {
		t.Errorf("final read %+v", r)
	}
	if r := read(); r.Stdout.Text != "" || r.Stderr.Text != "" {
		t.Errorf("read after the last = %+v", r)
	}
}

// Unread output beyond the bound is dropped from memory but kept in the
// spill file, and the read says so.
func TestReadDropped(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 1000, UnreadBytes: 1024}})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	id, err := l.Start(executor.Spec{Command: "seq 3000; echo small >&2"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(ctx, id)
	r, err := l.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	const total = 13893 // bytes of `seq 3000`
	if r.Stdout.Dropped != total-1024 || len(r.Stdout.Text) != 1024 || !strings.HasSuffix(r.Stdout.Text, "2999\n3000\n") {
		t.Errorf("stdout chunk: Dropped %d, %d bytes", r.Stdout.Dropped, len(r.Stdout.Text))
	}
	full, err := os.ReadFile(r.Stdout.SpillPath)
	if err != nil || len(full) != total || !strings.HasPrefix(string(full), "1\n2\n3\n") {
		t.Errorf("spill %q: %d bytes, %v", r.Stdout.SpillPath, len(full), err)
	}
	if d := cmp.Diff(executor.Chunk{Text: "small\n"}, r.Stderr); d != "" {
		t.Errorf("stderr (-want +got):\n%s", d)
	}
	r2, _ := l.Read(id)
	if r2.Stdout.Text != "" || r2.Stdout.Dropped != 0 {
		t.Errorf("second read %+v", r2.Stdout)
	}
}

// The three kill cases on a background task, each after a ready handshake.
func TestKill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cmd     string
		want    executor.Status
		wantOut string
	}{
		{"killed at once", "echo ready; sleep 100", executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGTERM"}, "ready\n"},
		{"trap exits in time", "trap 'echo got; exit 0' TERM; echo ready; while :; do sleep 0.05; done", executor.Status{State: executor.Completed}, "ready\ngot\n"},
		{"trap ignores, force-killed", "trap '' TERM; echo ready; while :; do sleep 0.05; done", executor.Status{State: executor.Killed, ExitCode: -1, Signal: "SIGKILL"}, "ready\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}})
			e := subscribe(t, l)
			ctx := testutil.Context(t)
			id, err := l.Start(executor.Spec{Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			out := readUntil(ctx, t, l, id, "ready\n")
			kr, err := l.Kill(id)
			if err != nil || kr.AlreadyFinished {
				t.Fatalf("Kill = %+v, %v", kr, err)
			}
			end := e.wait(ctx, id)
			if d := cmp.Diff(tc.want, end.Status); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			r, _ := l.Read(id)
			if out+r.Stdout.Text != tc.wantOut {
				t.Errorf("output %q, want %q", out+r.Stdout.Text, tc.wantOut)
			}
			kr, err = l.Kill(id)
			if err != nil || !kr.AlreadyFinished || kr.Status != end.Status {
				t.Errorf("Kill of a finished task = %+v, %v", kr, err)
			}
		})
	}
}

// A second kill does not restart the SIGTERM→SIGKILL escalation: the task
// dies one grace after the first kill, not one grace after the second.
func TestKillTwiceKeepsEscalation(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: grace}})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	id, err := l.Start(executor.Spec{Command: "trap 'echo got' TERM; echo ready; i=0; while :; do sleep 0.05; i=$((i+1)); echo tick$i; done"})
	if err != nil {
		t.Fatal(err)
	}
	readUntil(ctx, t, l, id, "ready\n")
	if _, err := l.Kill(id); err != nil {
		t.Fatal(err)
	}
	// Let the task live a while (its own ticks, at least 0.4s) after the
	// first SIGTERM before killing again.
	out := readUntil(ctx, t, l, id, "got\n")
	_, after, _ := strings.Cut(out, "got\n")
	var all strings.Builder
	all.WriteString(after)
	waitUntil(ctx, t, "8 ticks after got", func() bool {
		r, _ := l.Read(id)
		all.WriteString(r.Stdout.Text)
		return strings.Count(all.String(), "tick") >= 8
	})
	second := time.Now()
	kr, err := l.Kill(id)
	if err != nil || kr.AlreadyFinished || kr.Status.State != executor.Running {
		t.Fatalf("second Kill = %+v, %v", kr, err)
	}
	end := e.wait(ctx, id)
	if d := time.Since(second); d >= grace {
		t.Errorf("task died %v after the second kill; the escalation was restarted", d)
	}
	if end.Status.Signal != "SIGKILL" {
		t.Errorf("status %+v, want killed by SIGKILL", end.Status)
	}
	r, _ := l.Read(id)
	if n := strings.Count(out+all.String()+r.Stdout.Text, "got"); n != 1 {
		t.Errorf("SIGTERM delivered %d times, want 1", n)
	}
}

func TestUnknownTask(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	for name, call := range map[string]func() error{
		"Info": func() error { _, err := l.Info("bash-99"); return err },
		"Read": func() error { _, err := l.Read("bash-99"); return err },
		"Kill": func() error { _, err := l.Kill("bash-99"); return err },
	} {
		if err := call(); !errors.Is(err, executor.ErrUnknownTask) {
			t.Errorf("%s: %v, want ErrUnknownTask", name, err)
		}
	}
}

func TestKillOwned(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	e := subscribe(t, l)
	ctx := testutil.Context(t)
	owners := []string{"a", "a", "b", ""}
	ids := make([]string, len(owners))
	for i, o := range owners {
		id, err := l.Start(executor.Spec{Command: "sleep 100", Owner: o})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	done, err := l.Start(executor.Spec{Command: "true", Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(ctx, done)
	if n := l.KillOwned("a"); n != 2 {
		t.Errorf("KillOwned(a) = %d, want 2", n)
	}
	for _, id := range ids[:2] {
		if end := e.wait(ctx, id); end.Status.State != executor.Killed || end.Owner != "a" {
			t.Errorf("%s end %+v", id, end)
		}
	}
	if n := l.KillOwned(""); n != 0 {
		t.Errorf(`KillOwned("") = %d, want 0`, n)
	}
	for _, id := range ids[2:] {
		if info, _ := l.Info(id); info.Status.State != executor.Running {
			t.Errorf("%s of another owner: %+v", id, info.Status)
		}
	}
}

// Each end is delivered exactly once — completed, killed, failed, and killed
// by Close — and none after Close returns; only the one Close ended says
// Shutdown (the agent does not record those: the next process reports them).
func TestSubscribeOnce(t *testing.T) {
	t.Parallel()
	l, err := executor.NewLocal(executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}, DefaultWorkdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := subscribe(t, l)
	var unsubscribedCalls atomic.Int32
	unsub := l.Subscribe(func(executor.TaskEnd) { unsubscribedCalls.Add(1) })
	unsub()
	ctx := testutil.Context(t)

	completed, _ := l.Start(executor.Spec{Command: "true"})
	killed, _ := l.Start(executor.Spec{Command: "echo ready; sleep 100"})
	failed, _ := l.Start(executor.Spec{Command: "true", Workdir: "/no/such/dir"})
	atClose, _ := l.Start(executor.Spec{Command: "trap '' TERM; echo ready; while :; do sleep 0.05; done"})
	readUntil(ctx, t, l, killed, "ready")
	readUntil(ctx, t, l, atClose, "ready")
	if _, err := l.Kill(killed); err != nil {
		t.Fatal(err)
	}
	e.wait(ctx, completed)
	e.wait(ctx, killed)
	e.wait(ctx, failed)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	e.done.Store(true)

	e.mu.Lock()
	defer e.mu.Unlock()
	wantStates := map[string]executor.State{completed: executor.Completed, killed: executor.Killed, failed: executor.Failed, atClose: executor.Killed}
	gotStates := map[string]executor.State{}
	for id, got := range e.got {
		if len(got) != 1 {
			t.Errorf("%s delivered %d times", id, len(got))
		}
		gotStates[id] = got[0].Status.State
		if want := id == atClose; got[0].Shutdown != want {
			t.Errorf("%s: Shutdown %v, want %v", id, got[0].Shutdown, want)
		}
	}
	if d := cmp.Diff(wantStates, gotStates, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("ends (-want +got):\n%s", d)
	}
	if n := unsubscribedCalls.Load(); n != 0 {
		t.Errorf("unsubscribed fn called %d times", n)
	}
}

// Close kills foreground and background work, grandchildren included, and
// returns only when every group is gone; nothing starts afterwards.
func TestClose(t *testing.T) {
	t.Parallel()
	l, err := executor.NewLocal(executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}, DefaultWorkdir: t.TempDir(), SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t)
	bg := []string{
		"echo $$; echo ready; sleep 100",
		"echo $$; trap '' TERM; (trap '' TERM; while :; do sleep 0.05; done) & echo ready; while :; do sleep 0.05; done",
		"echo $$; sleep 100 & sleep 100 & echo ready; wait",
	}
	var groups []int
	for _, cmd := range bg {
		id, err := l.Start(executor.Spec{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, pids(t, readUntil(ctx, t, l, id, "ready"))...)
	}

	ready := make(chan struct{})
	var once sync.Once
	type runResult struct {
		res executor.Result
		err error
	}
	fg := make(chan runResult, 1)
	go func() {
		res, err := l.Run(ctx, executor.Spec{Command: "echo $$; trap '' TERM; sleep 100 & echo ready; wait", Observe: func(_ executor.Stream, p []byte, _ string) {
			if strings.Contains(string(p), "ready") {
				once.Do(func() { close(ready) })
			}
		}})
		fg <- runResult{res, err}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("foreground command never got ready")
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-fg
	if !errors.Is(r.err, executor.ErrAborted) || !errors.Is(r.err, executor.ErrClosed) {
		t.Errorf("foreground Run error = %v, want ErrAborted and ErrClosed", r.err)
	}
	groups = append(groups, pids(t, r.res.Stdout.Text)...)
	if len(groups) != 4 {
		t.Fatalf("groups %v, want 4", groups)
	}
	// No waiting here: Close returning is the promise.
	for _, pg := range groups {
		if !testutil.GroupGone(pg) {
			t.Errorf("group %d still has live members after Close", pg)
		}
	}

	if _, err := l.Run(ctx, executor.Spec{Command: "true"}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := l.Start(executor.Spec{Command: "true"}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestKillOwnedRemovesSpillFiles: a closing owner's spill files go with it;
// another owner's stay.
func TestKillOwnedRemovesSpillFiles(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 16}})
	ctx := testutil.Context(t)
	spill := func(owner string) string {
		res, err := l.Run(ctx, executor.Spec{Command: "seq 1 100", Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout.SpillPath == "" {
			t.Fatalf("no spill file for %q", owner)
		}
		return res.Stdout.SpillPath
	}
	mine, theirs := spill("a"), spill("b")
	l.KillOwned("a")
	if _, err := os.Stat(mine); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("closed owner's spill file still there: %v", err)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("other owner's spill file: %v", err)
	}
}

// TestKeepSpillFiles: with KeepSpillFiles neither a closing owner nor Close
// removes a spill file, so output that named it can still be read.
func TestKeepSpillFiles(t *testing.T) {
	t.Parallel()
	l, err := executor.NewLocal(executor.Options{Limits: executor.Limits{TailBytes: 16}, SpillDir: t.TempDir(),
		DefaultWorkdir: t.TempDir(), KeepSpillFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Run(testutil.Context(t), executor.Spec{Command: "seq 1 100", Owner: "a"})
	if err != nil || res.Stdout.SpillPath == "" {
		t.Fatalf("run: %v, spill %q", err, res.Stdout.SpillPath)
	}
	l.KillOwned("a")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(res.Stdout.SpillPath)
	if err != nil || len(full) != int(res.Stdout.Bytes) {
		t.Errorf("kept spill file: %d bytes of %d, %v", len(full), res.Stdout.Bytes, err)
	}
}
