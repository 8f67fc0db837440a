package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// task is a background command. Tasks are kept for the executor's lifetime:
// the owner must outlive the process so a later read is still fenced.
type task struct {
	id      string
	owner   string
	command string
	workdir string
	started time.Time
	p       *proc // nil until started, and when the command could not start
	// stopStart ends the start while it waits (for a container being
	// made): a kill of a task not started yet is that.
	stopStart context.CancelFunc

	// mu guards status.
	mu     sync.Mutex
	status Status
}

func (t *task) getStatus() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

func (t *task) info() TaskInfo {
	return TaskInfo{ID: t.id, Owner: t.owner, Command: t.command, Workdir: t.workdir, Status: t.getStatus(), Started: t.started}
}

// Start starts a command in the background and returns its task id at once
// ("bash-1", "bash-2", … global to the executor). No timeout applies. If the
// command cannot start, the task is recorded as Failed, its end is
// delivered to subscribers, and Start returns the id with the error.
func (l *Local) Start(spec Spec) (string, error) {
	return l.StartContext(context.Background(), spec)
}

// StartContext is Start whose start — not the task — ends with ctx: a
// start waiting for its container is given up when the turn that asked
// for it is cancelled. Once started, the task is ctx's no more.
func (l *Local) StartContext(ctx context.Context, spec Spec) (string, error) {
	spec.Timeout = 0 // background tasks have none; do not let resolve judge it
	spec, err := l.resolve(spec)
	if err != nil {
		return "", err
	}
	spec.Timeout = 0
	spec.Observe = nil

	var num int64
	if l.opts.NextTaskID != nil {
		if num, err = l.opts.NextTaskID(spec.Owner); err != nil {
			return "", fmt.Errorf("number the task: %w", err)
		}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return "", ErrClosed
	}
	if num == 0 {
		l.nextTask++
		num = int64(l.nextTask)
	}
	id := "bash-" + strconv.FormatInt(num, 10)
	marker := l.ownMarker("TASK")
	sctx, stopStart := context.WithCancel(ctx)
	defer stopStart()
	t := &task{id: id, owner: spec.Owner, command: spec.Command, workdir: spec.Workdir, started: time.Now(), status: Status{State: Running}, stopStart: stopStart}
	l.tasks[id] = t
	// Counted before the lock is released so Close waits for this task's
	// end to be delivered, whatever happens next.
	l.wg.Add(1)
	l.mu.Unlock()
	if l.opts.TaskStarted != nil {
		l.opts.TaskStarted(id, spec.Owner)
	}
	if spec.Registered != nil {
		spec.Registered(id)
	}

	p, err := l.spawn(sctx, spec, id, l.opts.UnreadBytes, marker)
	if err != nil {
		st := Status{State: Failed, Err: err}
		t.mu.Lock()
		t.status = st
		t.mu.Unlock()
		go func() {
			defer l.wg.Done()
			l.notify(TaskEnd{ID: id, Owner: t.owner, Status: st})
		}()
		// The spawn error reads as it does for a foreground run (it names
		// the workdir or the shell); the returned id says which task failed.
		return id, err
	}
	// The id is predictable, so a Read may already be looking at t.
	t.mu.Lock()
	t.p = p
	t.mu.Unlock()
	go l.supervise(t)
	return id, nil
}

func (l *Local) supervise(t *task) {
	defer l.wg.Done()
	p := t.proc()
	p.waitLeader(nil, nil, nil)
	p.collect()
	p.stdout.releaseTail()
	p.stderr.releaseTail()
	st := Status{State: Completed}
	st.ExitCode, st.Signal = p.exit()
	if st.Signal != "" {
		st.State = Killed
	}
	l.logger.Debug("task ended", zap.String("task", t.id), zap.Stringer("state", st.State), zap.Int("exit_code", st.ExitCode), zap.String("signal", st.Signal))
	l.finish(t, st, p.closing())
	p.reap()
}

func (t *task) proc() *proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

// finish records a task's end and tells the subscribers, exactly once.
func (l *Local) finish(t *task, st Status, shutdown bool) {
	t.mu.Lock()
	t.status = st
	t.mu.Unlock()
	l.notify(TaskEnd{ID: t.id, Owner: t.owner, Status: st, Shutdown: shutdown})
}

func (l *Local) lookup(id string) (*task, error) {
	l.mu.Lock()
	t, ok := l.tasks[id]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("task %q: %w", id, ErrUnknownTask)
	}
	return t, nil
}

// Info describes a task without consuming its output.
func (l *Local) Info(id string) (TaskInfo, error) {
	t, err := l.lookup(id)
	if err != nil {
		return TaskInfo{}, err
	}
	return t.info(), nil
}

// Read returns the output produced since the previous Read of the task,
// and its status.
func (l *Local) Read(id string) (Read, error) {
	t, err := l.lookup(id)
	if err != nil {
		return Read{}, err
	}
	// Status first: once it says finished, the streams are complete, so the
	// chunks taken next hold everything.
	r := Read{Status: t.getStatus()}
	if p := t.proc(); p != nil {
		r.Stdout = p.stdout.take()
		r.Stderr = p.stderr.take()
	}
	return r, nil
}

// Kill sends SIGTERM to the task's process group and SIGKILL after the
// grace period, and returns at once. Killing a finished task says so, and
// ends what still carries its marker (see endMarked); a second kill does
// not restart the escalation.
func (l *Local) Kill(id string) (KillResult, error) {
	t, err := l.lookup(id)
	if err != nil {
		return KillResult{}, err
	}
	if st := t.getStatus(); st.State != Running {
		l.endMarked([]*task{t})
		return KillResult{AlreadyFinished: true, Status: st}, nil
	}
	t.end()
	return KillResult{Status: t.getStatus()}, nil
}

// end ends a running task: its process group, or, while it is still
// starting, its start (the task then ends failed). It reports whether it
// signalled anything.
func (t *task) end() bool {
	if p := t.proc(); p != nil {
		return p.terminate(false)
	}
	t.stopStart()
	return true
}

// KillOwned ends what a closing owner (a session) leaves behind: it kills
// every running task the owner owns, stops its services, removes the spill
// files of the owner's commands (unless KeepSpillFiles), and returns how
// many tasks it signalled. An empty owner matches nothing:
// unowned tasks belong to no session whose end could justify killing them.
func (l *Local) KillOwned(owner string) int {
	if owner == "" {
		return 0
	}
	l.mu.Lock()
	var mine []*task
	for _, t := range l.tasks {
		if t.owner == owner {
			mine = append(mine, t)
		}
	}
	services := l.ownedServices(owner)
	spills := l.spills[owner]
	delete(l.spills, owner)
	ownDir := l.ownDirs[owner]
	if !l.opts.KeepSpillFiles {
		delete(l.ownDirs, owner)
	}
	l.mu.Unlock()
	if c := l.opts.Confine; c != nil {
		c.Release(owner)
	}
	if !l.opts.KeepSpillFiles {
		l.removeSpills(spills, ownDir)
	}
	for _, s := range services {
		s.Stop()
	}
	n := 0
	var finished []*task
	for _, t := range mine {
		if t.getStatus().State != Running {
			finished = append(finished, t)
		} else if t.end() {
			n++
		}
	}
	l.endMarked(finished)
	return n
}

// endMarked ends, in the background, every process that still carries the
// marker of one of these finished tasks: a daemon (`( setsid server & )`,
// the shape of `server --daemonize`) left the task's group and session
// and outlived its shell, so the task's end took nothing of it. A running
// task's end walks its marker itself (see proc.signal). SIGTERM, SIGKILL
// after the grace; Close waits for it. Markers are found in the host's
// process table (Linux): a container's command is ended with its
// container instead.
func (l *Local) endMarked(ts []*task) {
	var markers []string
	for _, t := range ts {
		if p := t.proc(); p != nil && p.marker != "" && p.hostPid() > 0 {
			markers = append(markers, p.marker)
		}
	}
	if len(markers) == 0 {
		return
	}
	l.mu.Lock()
	if l.closed {
		// Close ends what every task's marker is on.
		l.mu.Unlock()
		return
	}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		if err := proctab.End(proctab.Ending{Markers: markers, Grace: l.opts.KillGrace}); err != nil {
			l.logger.Warn("end a finished task's leftovers", zap.Error(err))
		}
	}()
}

// removeSpills removes a gone owner's spill files and directory: nobody
// can refer to its output any more. A task still writing keeps its open
// file until it dies; the name goes now.
func (l *Local) removeSpills(spills []string, ownDir string) {
	for _, path := range spills {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Warn("remove spill file", zap.String("path", path), zap.Error(err))
		}
	}
	if ownDir != "" {
		if err := os.RemoveAll(ownDir); err != nil {
			l.logger.Warn("remove spill dir", zap.String("path", ownDir), zap.Error(err))
		}
	}
}
