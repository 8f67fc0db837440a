package executor_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// waitingConfiner's starts wait until they are stopped, as a container
// being made for a session does; started tells each start's arrival.
type waitingConfiner struct{ started chan struct{} }

var errStoppedWaiting = errors.New("stopped while waiting")

func (w waitingConfiner) Start(c executor.Confinement) (executor.Process, error) {
	w.started <- struct{}{}
	<-c.Stop
	return nil, errStoppedWaiting
}
func (waitingConfiner) Release(string) {}
func (waitingConfiner) Close() error   { return nil }

// A background task whose start still waits (its container being made) is
// not "already finished": bash_kill, the session's close and a cancel of
// the turn that asked each end the wait, and the task ends failed.
func TestTaskStillStarting(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	w := waitingConfiner{started: make(chan struct{}, 1)}
	l := newLocal(t, executor.Options{Confine: w, ConfineAll: true})
	e := subscribe(t, l)
	// start starts a task on its own goroutine and returns its id once
	// the confiner holds it (ids run from 1 in a new executor).
	next := 0
	start := func(sctx context.Context, owner string) (string, <-chan error) {
		next++
		errc := make(chan error, 1)
		go func() {
			_, err := l.StartContext(sctx, executor.Spec{Command: "true", Owner: owner})
			errc <- err
		}()
		select {
		case <-w.started:
		case <-ctx.Done():
			t.Fatal("the start never reached the confiner")
		}
		return "bash-" + strconv.Itoa(next), errc
	}
	wantFailed := func(what, id string, errc <-chan error) {
		t.Helper()
		select {
		case err := <-errc:
			if !errors.Is(err, errStoppedWaiting) {
				t.Errorf("%s: start error %v; want the confiner's", what, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s: the start still waits", what)
		}
		if end := e.wait(ctx, id); end.Status.State != executor.Failed {
			t.Errorf("%s: end %+v; want failed", what, end.Status)
		}
	}

	id, errc := start(context.Background(), "a")
	kr, err := l.Kill(id)
	if err != nil || kr.AlreadyFinished {
		t.Fatalf("Kill of a starting task = %+v, %v; want it killed, not already finished", kr, err)
	}
	wantFailed("bash_kill", id, errc)

	id, errc = start(context.Background(), "b")
	if n := l.KillOwned("b"); n != 1 {
		t.Errorf("KillOwned counted %d tasks; want the starting one", n)
	}
	wantFailed("session close", id, errc)

	turn, cancel := context.WithCancel(context.Background())
	id, errc = start(turn, "c")
	cancel()
	wantFailed("cancelled turn", id, errc)
}
