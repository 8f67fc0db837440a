package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions"
)

func TestMain(m *testing.M) {
	testutil.Main(m, nil)
}

// wait fails the test if ch is not closed before ctx ends.
func wait(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

func mustCreate(t *testing.T, r *sessions.Registry) *sessions.Session {
	t.Helper()
	s, err := r.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCreateValidatesCwd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cwd     string
		wantErr string // substring; empty means success
	}{
		{name: "empty", cwd: "", wantErr: "required"},
		{name: "relative", cwd: "some/dir", wantErr: "absolute"},
		{name: "dot", cwd: ".", wantErr: "absolute"},
		{name: "missing", cwd: filepath.Join(dir, "missing"), wantErr: "does not exist"},
		{name: "a file", cwd: file, wantErr: "not a directory"},
		{name: "existing directory", cwd: dir},
		{name: "unclean directory", cwd: dir + "/./"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := sessions.New(sessions.Options{})
			s, err := r.Create(tt.cwd, nil)
			if tt.wantErr != "" {
				if !errors.Is(err, sessions.ErrInvalidCwd) {
					t.Fatalf("err = %v, want ErrInvalidCwd", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %q, want it to say %q", err, tt.wantErr)
				}
				if r.Len() != 0 {
					t.Errorf("registry holds %d sessions after a failed create", r.Len())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Cwd != dir {
				t.Errorf("cwd = %q, want %q", s.Cwd, dir)
			}
			if s.ID == "" {
				t.Error("empty session id")
			}
			if s.Mode() != sessions.ModeAsk {
				t.Errorf("mode = %q, want ask", s.Mode())
			}
			got, err := r.Get(s.ID)
			if err != nil || got != s {
				t.Errorf("Get(%q) = %v, %v", s.ID, got, err)
			}
		})
	}
}

func TestIDsAreDistinct(t *testing.T) {
	t.Parallel()
	r := sessions.New(sessions.Options{})
	seen := map[string]bool{}
	for range 20 {
		s := mustCreate(t, r)
		if seen[s.ID] {
			t.Fatalf("duplicate id %q", s.ID)
		}
		seen[s.ID] = true
	}
	n := 0
	r2 := sessions.New(sessions.Options{NewID: func() string { n++; return fmt.Sprintf("id-%d", n) }})
	if s := mustCreate(t, r2); s.ID != "id-1" {
		t.Errorf("id = %q, want the injected id-1", s.ID)
	}
}

func TestUnknownSession(t *testing.T) {
	t.Parallel()
	r := sessions.New(sessions.Options{})
	if _, err := r.Get("nope"); !errors.Is(err, sessions.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Get: err = %v, want ErrNotFound naming the id", err)
	}
	if err := r.Close("nope"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Close: err = %v, want ErrNotFound", err)
	}
}

func TestBeginTurnSupersedes(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	s := mustCreate(t, sessions.New(sessions.Options{}))

	ctx1, end1, err := s.BeginTurn(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var firstEnded atomic.Bool
	started2 := make(chan struct{})
	var ctx2 context.Context
	var end2 func()
	go func() {
		defer close(started2)
		var err error
		ctx2, end2, err = s.BeginTurn(ctx, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if !firstEnded.Load() {
			t.Error("second turn started before the first one's end() ran")
		}
	}()

	wait(t, ctx, ctx1.Done(), "the first turn to be cancelled")
	if cause := context.Cause(ctx1); !errors.Is(cause, sessions.ErrSuperseded) {
		t.Errorf("first turn's cause = %v, want ErrSuperseded", cause)
	}
	select {
	case <-started2:
		t.Fatal("second turn started while the first one is still running")
	default:
	}
	// The first turn finishes its cleanup (appending history) before end().
	s.Append(agent.Message{Role: agent.RoleUser, Content: "first"})
	firstEnded.Store(true)
	end1()

	wait(t, ctx, started2, "the second turn to start")
	if ctx2 == nil {
		t.FailNow()
	}
	if ctx2.Err() != nil {
		t.Errorf("second turn's ctx is done: %v", context.Cause(ctx2))
	}
	if got := s.History(); len(got) != 1 || got[0].Content != "first" {
		t.Errorf("second turn sees history %+v, want the first turn's", got)
	}
	end2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Errorf("ctx after end() = %v, want cancelled (it must not leak)", ctx2.Err())
	}
}

func TestBeginTurnParentCancel(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(testutil.Context(t))
	s := mustCreate(t, sessions.New(sessions.Options{}))
	tctx, end, err := s.BeginTurn(parent, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	cancel()
	wait(t, testutil.Context(t), tctx.Done(), "the turn to follow its parent")
}

// TestTurnsNeverOverlap starts many prompts on one session at once: each
// supersedes the one before, and at no moment do two run.
func TestTurnsNeverOverlap(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	parent, cancelAll := context.WithCancelCause(ctx)
	defer cancelAll(nil)
	s := mustCreate(t, sessions.New(sessions.Options{}))
	const n = 64
	var inFlight, maxInFlight, begun atomic.Int32
	causes := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			tctx, end, err := s.BeginTurn(parent, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer end()
			cur := inFlight.Add(1)
			for {
				m := maxInFlight.Load()
				if cur <= m || maxInFlight.CompareAndSwap(m, cur) {
					break
				}
			}
			begun.Add(1)
			// A turn runs until it is superseded or cancelled, yielding so
			// that an overlapping turn would get the chance to run.
			for tctx.Err() == nil {
				runtime.Gosched()
				if ctx.Err() != nil {
					t.Error("turn never cancelled")
					break
				}
			}
			inFlight.Add(-1)
			causes <- context.Cause(tctx)
		})
	}
	// Only the newest turn is left running; cancel it.
	for begun.Load() < n && ctx.Err() == nil {
		runtime.Gosched()
	}
	cancelAll(sessions.ErrCancelled)
	wg.Wait()
	close(causes)
	if m := maxInFlight.Load(); m != 1 {
		t.Errorf("at most %d turns ran at once, want 1", m)
	}
	counts := map[error]int{}
	for c := range causes {
		counts[c]++
	}
	want := map[error]int{sessions.ErrSuperseded: n - 1, sessions.ErrCancelled: 1}
	if diff := cmp.Diff(want, counts, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// TestDoneContextBeginsDone: a turn whose context is already done (its
// prompt was cancelled before it began) never becomes current, so it cannot
// supersede the turn in flight.
func TestDoneContextBeginsDone(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	s := mustCreate(t, sessions.New(sessions.Options{}))
	tctx, end, err := s.BeginTurn(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	dead, kill := context.WithCancelCause(ctx)
	kill(sessions.ErrCancelled)
	dctx, dend, err := s.BeginTurn(dead, 2)
	if err != nil {
		t.Fatal(err)
	}
	dend()
	if !errors.Is(context.Cause(dctx), sessions.ErrCancelled) {
		t.Errorf("cause = %v, want ErrCancelled", context.Cause(dctx))
	}
	if tctx.Err() != nil {
		t.Errorf("a turn that began done superseded the one in flight: %v", context.Cause(tctx))
	}
	// Nor did it take the newest ticket: ticket 2 still supersedes.
	tctx2, end2, err := beginAsync(t, s, ctx, 2, func() { <-tctx.Done(); end() })
	if err != nil {
		t.Fatal(err)
	}
	defer end2()
	if tctx2.Err() != nil {
		t.Errorf("ticket 2 begun after a dead ticket 2: %v", context.Cause(tctx2))
	}
}

// beginAsync begins a turn while meanwhile runs (it must end the turn the
// new one supersedes).
func beginAsync(t *testing.T, s *sessions.Session, ctx context.Context, tk sessions.Ticket, meanwhile func()) (context.Context, func(), error) {
	t.Helper()
	go meanwhile()
	return s.BeginTurn(ctx, tk)
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	var mu sync.Mutex
	var closed []string
	r := sessions.New(sessions.Options{OnClose: func(id string) {
		mu.Lock()
		closed = append(closed, id)
		mu.Unlock()
	}})
	s := mustCreate(t, r)
	other := mustCreate(t, r)
	tctx, end, err := s.BeginTurn(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	otherCtx, otherEnd, err := other.BeginTurn(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-otherCtx.Done(); otherEnd() }()

	// The turn ends when it sees the cancel, as a real turn does; Close
	// must wait for that before it runs OnClose.
	ended := make(chan struct{})
	go func() {
		<-tctx.Done()
		mu.Lock()
		if len(closed) != 0 {
			t.Error("OnClose ran before the closed session's turn ended")
		}
		mu.Unlock()
		end()
		close(ended)
	}()
	if err := r.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, ended, "the closed session's turn to end")
	if cause := context.Cause(tctx); !errors.Is(cause, sessions.ErrClosed) {
		t.Errorf("cause = %v, want ErrClosed", cause)
	}
	if otherCtx.Err() != nil {
		t.Error("closing one session cancelled another's turn")
	}
	if _, err := r.Get(s.ID); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Get after close: %v, want ErrNotFound", err)
	}
	if _, _, err := s.BeginTurn(ctx, 0); !errors.Is(err, sessions.ErrClosed) {
		t.Errorf("BeginTurn after close: %v, want ErrClosed", err)
	}
	if err := r.Close(s.ID); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("second Close: %v, want ErrNotFound", err)
	}
	mu.Lock()
	if diff := cmp.Diff([]string{s.ID}, closed); diff != "" {
		t.Errorf("OnClose calls (-want +got):\n%s", diff)
	}
	mu.Unlock()

	r.CloseAll()
	wait(t, ctx, otherCtx.Done(), "CloseAll to cancel the other turn")
	if r.Len() != 0 {
		t.Errorf("%d sessions left after CloseAll", r.Len())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(closed) != 2 || closed[1] != other.ID {
		t.Errorf("OnClose calls = %v, want both sessions once", closed)
	}
}

func TestNotices(t *testing.T) {
	t.Parallel()
	r := sessions.New(sessions.Options{})
	s := mustCreate(t, r)
	other := mustCreate(t, r)
	if got := s.DrainNotices(); len(got) != 0 {
		t.Errorf("fresh session has notices %q", got)
	}
	r.Notify(s.ID, "one")
	r.Notify(s.ID, "two")
	r.Notify(other.ID, "other's")
	r.Notify("gone", "dropped")
	if diff := cmp.Diff([]string{"one", "two"}, s.DrainNotices()); diff != "" {
		t.Errorf("drained (-want +got):\n%s", diff)
	}
	if got := s.DrainNotices(); len(got) != 0 {
		t.Errorf("second drain = %q, want nothing", got)
	}
	if diff := cmp.Diff([]string{"other's"}, other.DrainNotices()); diff != "" {
		t.Errorf("other session (-want +got):\n%s", diff)
	}
	if err := r.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	r.Notify(s.ID, "after close")
	if got := s.DrainNotices(); len(got) != 0 {
		t.Errorf("closed session got notices %q", got)
	}
}

// TestConcurrentUse runs every accessor at once under the race detector.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	r := sessions.New(sessions.Options{})
	s := mustCreate(t, r)
	const n = 200
	var wg sync.WaitGroup
	var drained atomic.Int32
	wg.Go(func() {
		for i := range n {
			r.Notify(s.ID, fmt.Sprint(i))
		}
	})
	wg.Go(func() {
		for range n {
			drained.Add(int32(len(s.DrainNotices())))
			s.Append(agent.Message{Role: agent.RoleUser})
			_ = s.History()
		}
	})
	wg.Go(func() {
		for i := range n {
			mode := sessions.ModeAsk
			if i%2 == 0 {
				mode = sessions.ModeAuto
			}
			if err := s.SetMode(mode); err != nil {
				t.Error(err)
			}
			_ = s.Mode()
			s.Remember(fmt.Sprint("k", i))
			_ = s.Remembered()
			_ = r.Len()
		}
	})
	wg.Wait()
	drained.Add(int32(len(s.DrainNotices())))
	if drained.Load() != n {
		t.Errorf("drained %d notices, want %d (none lost or duplicated)", drained.Load(), n)
	}
	if got := len(s.History()); got != n {
		t.Errorf("history has %d messages, want %d", got, n)
	}
}

func TestModesAndMemory(t *testing.T) {
	t.Parallel()
	s := mustCreate(t, sessions.New(sessions.Options{}))
	if err := s.SetMode("yolo"); err == nil {
		t.Error("SetMode accepted an unknown mode")
	}
	if s.Mode() != sessions.ModeAsk {
		t.Errorf("mode = %q after a rejected change, want ask", s.Mode())
	}
	if err := s.SetMode(sessions.ModeAuto); err != nil || s.Mode() != sessions.ModeAuto {
		t.Errorf("SetMode(auto) = %v, mode %q", err, s.Mode())
	}
	s.Remember("go test", "git status")
	m := s.Remembered()
	m["rm"] = true // a copy: the caller cannot widen the session's memory
	if diff := cmp.Diff(map[string]bool{"go test": true, "git status": true}, s.Remembered()); diff != "" {
		t.Errorf("remembered (-want +got):\n%s", diff)
	}
	h := s.History()
	s.Append(agent.Message{Role: agent.RoleUser, Content: "x"})
	if len(h) != 0 {
		t.Error("History returned a view, not a copy")
	}
}

// TestTicketOrder: the order the prompts arrived in (their tickets)
// decides, not the order their turns happen to begin in.
func TestTicketOrder(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)

	t.Run("older ticket begun after a newer one does not supersede it", func(t *testing.T) {
		s := mustCreate(t, sessions.New(sessions.Options{}))
		tctx2, end2, err := s.BeginTurn(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		tctx1, end1, err := s.BeginTurn(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		end1()
		if !errors.Is(context.Cause(tctx1), sessions.ErrSuperseded) {
			t.Errorf("older ticket's cause = %v, want ErrSuperseded", context.Cause(tctx1))
		}
		if tctx2.Err() != nil {
			t.Errorf("newer turn was cancelled by the older ticket: %v", context.Cause(tctx2))
		}
		end2()
	})

	t.Run("newer ticket supersedes", func(t *testing.T) {
		s := mustCreate(t, sessions.New(sessions.Options{}))
		tctx1, end1, err := s.BeginTurn(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		tctx2, end2, err := beginAsync(t, s, ctx, 2, func() { <-tctx1.Done(); end1() })
		if err != nil {
			t.Fatal(err)
		}
		defer end2()
		if !errors.Is(context.Cause(tctx1), sessions.ErrSuperseded) {
			t.Errorf("ticket 1 cause = %v, want ErrSuperseded", context.Cause(tctx1))
		}
		if tctx2.Err() != nil {
			t.Errorf("ticket 2 born done: %v", context.Cause(tctx2))
		}
	})

	t.Run("no ticket supersedes whatever runs", func(t *testing.T) {
		s := mustCreate(t, sessions.New(sessions.Options{}))
		tctx5, end5, err := s.BeginTurn(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		tctx0, end0, err := beginAsync(t, s, ctx, 0, func() { <-tctx5.Done(); end5() })
		if err != nil {
			t.Fatal(err)
		}
		defer end0()
		if tctx0.Err() != nil {
			t.Errorf("unordered turn born done: %v", context.Cause(tctx0))
		}
	})
}

// TestCancelThrough: a cancel covering tickets 1..2 ends the turn in flight
// with ticket 2, makes ticket 1 (its prompt read before the cancel, its
// handler late) begin cancelled, and leaves ticket 3 and a turn with no
// ticket alone.
func TestCancelThrough(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	s := mustCreate(t, sessions.New(sessions.Options{}))
	tctx2, end2, err := s.BeginTurn(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	s.CancelThrough(2)
	if !errors.Is(context.Cause(tctx2), sessions.ErrCancelled) {
		t.Fatalf("turn 2 after a cancel through 2: cause %v, want ErrCancelled", context.Cause(tctx2))
	}
	tctx1, end1, err := s.BeginTurn(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	end1()
	if !errors.Is(context.Cause(tctx1), sessions.ErrCancelled) {
		t.Errorf("turn 1 begun after a cancel through 2: cause %v, want ErrCancelled", context.Cause(tctx1))
	}
	end2()
	tctx3, end3, err := s.BeginTurn(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.CancelThrough(2)
	if tctx3.Err() != nil {
		t.Errorf("turn 3 cancelled by a cancel through 2: %v", context.Cause(tctx3))
	}
	end3()
	tctx0, end0, err := s.BeginTurn(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer end0()
	s.CancelThrough(5)
	if tctx0.Err() != nil {
		t.Errorf("a turn with no ticket cancelled by CancelThrough: %v", context.Cause(tctx0))
	}
}
