// Package bashtool implements the model-facing tools bash, bash_output and
// bash_kill as pure schema and text shaping over the executor seam: argument
// validation, the calling session's workdir, task ownership and the exact
// result text of tool-text.md. It never touches a process.
//
// Decisions the text contract leaves open:
//   - Arguments that are not a JSON object read
//     "invalid arguments: expected a JSON object"; empty arguments count as {}
//     so the model hears which property is missing. A null property counts as
//     absent.
//   - A non-string description reads "invalid description: expected a
//     non-empty string": tool-text.md has no type message for it.
//   - A background command that cannot start is an error result at once
//     ("Error: <spawn error>"), so no completion notice follows it. Its task
//     still exists: bash_output on it repeats the spawn error as an error
//     result (none of the four status lines is true of a process that never
//     ran), and bash_kill reports it as already finished, as the executor
//     does.
package bashtool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Tool names, in registration order.
const (
	NameBash   = "bash"
	NameOutput = "bash_output"
	NameKill   = "bash_kill"
)

// Runner runs bash's commands: in the foreground, or started in the
// background. The executor resolves each spec (workdir, timeout) itself.
type Runner interface {
	Run(ctx context.Context, spec executor.Spec) (executor.Result, error)
	StartContext(ctx context.Context, spec executor.Spec) (string, error)
}

// Tasks is what bash_output and bash_kill do to a background task.
type Tasks interface {
	Info(id string) (executor.TaskInfo, error)
	Read(id string) (executor.Read, error)
	Kill(id string) (executor.KillResult, error)
}

// TaskEnds tells when background tasks end; the set turns the ends into
// completion notices.
type TaskEnds interface {
	Subscribe(fn func(executor.TaskEnd)) (unsubscribe func())
}

// Executor is everything the tool set uses of an executor.
type Executor interface {
	Runner
	Tasks
	TaskEnds
}

// Options configures the tool set.
type Options struct {
	// Executor runs every command. Required.
	Executor Executor
	// Limits are the limits the executor was given (the same value): the
	// bash description names its timeouts, and a timed-out marker falls
	// back on them when a result does not say. Zero fields mean
	// executor.DefaultLimits', as they do for the executor.
	Limits executor.Limits
	// Notify, if set, receives a completion notice for each owned background
	// task that ends: the owner's session id and the notice text. It runs on
	// an executor goroutine and must not block; nil means no notices.
	Notify func(sessionID, text string)
	// Logger receives debug and warning logs; nil means none.
	Logger *zap.Logger
	// Changes measures what each command changes under its session's
	// directory, for the editor's diffs; nil means no diffs.
	Changes *changes.Tracker
}

// Set is the three tools over one executor, plus the subscription that turns
// task ends into completion notices.
type Set struct {
	log   *zap.Logger
	tools []tools.Tool
	kill  *killTool
	// lister lists a session's tasks for /tasks; nil when the executor
	// cannot.
	lister TaskLister

	unsubscribe func()
	// pending holds what background tasks changed until it is reported.
	pending *pendingChanges

	// mu guards closed and notify; a notice holds it for reading while it
	// calls notify so Close can promise no notice after it returns.
	mu     sync.RWMutex
	closed bool
	notify func(sessionID, text string)
}

// New builds the tool set and subscribes to task ends when opts.Notify is
// set. Call Close to unsubscribe.
func New(opts Options) (*Set, error) {
	if opts.Executor == nil {
		return nil, errors.New("bashtool: nil executor")
	}
	lim := opts.Limits.WithDefaults()
	if lim.DefaultTimeout < 0 || lim.MaxTimeout < lim.DefaultTimeout {
		return nil, fmt.Errorf("bashtool: default timeout %v not within 0 and max %v", lim.DefaultTimeout, lim.MaxTimeout)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("bashtool")
	ex := opts.Executor
	s := &Set{log: log, notify: opts.Notify, pending: &pendingChanges{}}
	s.lister, _ = ex.(TaskLister)
	// /kill waits for the end it caused, so a /tasks right after says
	// "killed": SIGKILL follows SIGTERM after KillGrace, and the leftover
	// read is bounded too.
	s.kill = &killTool{tasks: ex, ends: ex, wait: lim.KillGrace + lim.LeftoverGrace + time.Second, schema: taskSchema("to stop")}
	s.tools = []tools.Tool{
		&bashTool{runner: ex, tasks: ex, limits: lim, log: log, changes: opts.Changes, pending: s.pending,
			description: bashDescription(lim.DefaultTimeout, lim.MaxTimeout), schema: bashSchema(lim.DefaultTimeout, lim.MaxTimeout)},
		&outputTool{tasks: ex, schema: taskSchema("to read"), pending: s.pending},
		s.kill,
	}
	if opts.Notify != nil || opts.Changes != nil {
		s.unsubscribe = ex.Subscribe(s.taskEnded)
	}
	return s, nil
}

// Tools returns bash, bash_output and bash_kill, in that order.
func (s *Set) Tools() []tools.Tool {
	return append([]tools.Tool(nil), s.tools...)
}

// Close unsubscribes from task ends; no notice is delivered after it
// returns. It does not
// close the executor, which the set does not own.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.unsubscribe != nil {
		s.unsubscribe()
	}
	return nil
}

// NoticesDelivered says the session's completion notices queued so far
// went with a model request.
func (s *Set) NoticesDelivered(sessionID string) {
	s.pending.delivered(sessionID)
}

// NoticedChanges takes what the session's background tasks changed whose
// end a delivered completion notice reported, for the editor to show with
// it: call it when the turn the notices went with ends, so that a
// bash_output call of that turn which reads a task's end shows its changes
// instead. A task that changed nothing is not in it.
func (s *Set) NoticedChanges(sessionID string) []tools.Noticed {
	return s.pending.noticed(sessionID)
}

// Forget drops what the session's background tasks changed and no
// bash_output reported: the session closed.
func (s *Set) Forget(sessionID string) {
	s.pending.forget(sessionID)
}

// taskEnded turns an owned task's end into a notice for its session. An
// unowned task has nobody to tell, and a Failed one was already reported as
// an error result when it was started.
func (s *Set) taskEnded(end executor.TaskEnd) {
	s.pending.ended(end.ID, end.Status.State != executor.Failed)
	if end.Owner == "" || end.Status.State == executor.Failed {
		return
	}
	text := fmt.Sprintf("background bash task %s finished %s. Read its output with bash_output.", end.ID, statusLine(end.Status))
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || s.notify == nil {
		return
	}
	// Told before the notice is queued, so the drain that delivers the
	// notice finds the task's changes.
	raw := RawOutput{TaskID: end.ID}
	raw.status(end.Status)
	s.pending.tell(end.Owner, end.ID, text, raw)
	s.notify(end.Owner, text)
	// The next model request of the session carries the notice from now
	// on; the golden transcripts' commands wait on this line.
	s.log.Debug("notice queued", zap.String("task", end.ID), zap.String("session", end.Owner))
}
