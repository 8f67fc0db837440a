package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// bashTool runs a command in the foreground or starts a background task.
type bashTool struct {
	runner Runner
	// tasks tells the directory a background task was started in.
	tasks  Tasks
	limits executor.Limits
	log    *zap.Logger
	// changes measures what commands change; nil = off. pending keeps a
	// background task's measure until its end is reported.
	changes     *changes.Tracker
	pending     *pendingChanges
	description string
	schema      json.RawMessage
}

var _ tools.Tool = (*bashTool)(nil)

func (t *bashTool) Name() string            { return NameBash }
func (t *bashTool) Description() string     { return t.description }
func (t *bashTool) Schema() json.RawMessage { return t.schema }

// Prepare reads the arguments once: leniently for what the editor shows (the
// command even when the call is about to be rejected), strictly for what
// runs. Only arguments that validate have a subject: the exact command line
// Run will hand the executor.
func (t *bashTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	obj, err := parseObject(raw)
	call := describeBash(caller, obj, err)
	var args bashArgs
	if err == nil {
		args, err = obj.bashArgs()
	}
	if err == nil {
		call.Subject = tools.Shell(args.Command)
	}
	before := RawOutput{Cwd: call.Cwd}
	return tools.Prepared{
		Call: call,
		Run: func(ctx context.Context, live tools.Live) tools.Result {
			if err != nil {
				return errorResult(before, err.Error())
			}
			return t.run(ctx, caller, args, before, live)
		},
		Skip: func(text string) tools.Result { return skipped(before, text) },
	}
}

// describeBash is the editor's view of a call before it runs. obj may be
// nil when the arguments are not an object (err is then set).
func describeBash(caller tools.Caller, obj object, err error) tools.Call {
	c := tools.Call{Title: NameBash, Kind: tools.KindExecute}
	if err != nil {
		return c
	}
	if cmd, _, _ := obj.str("command"); strings.Trim(cmd, " \t\n") != "" {
		var whole bool
		c.Title, whole = commandTitle(cmd)
		if !whole {
			c.Body = tools.Visible(strings.Trim(cmd, "\n"))
		}
	}
	c.Description, _, _ = obj.str("description")
	// A foreground command streams its output while it runs; a background
	// start returns at once and is read with bash_output.
	c.Live = true
	if raw, ok := obj.lookup("run_in_background"); ok {
		var bg bool
		if json.Unmarshal(raw, &bg) == nil && bg {
			c.Live = false
		}
	}
	workdir, _, _ := obj.str("workdir")
	c.Cwd = sessionWorkdir(caller.Cwd, workdir)
	return c
}

// sessionWorkdir applies the calling session's cwd: it is the default, and a
// relative workdir is resolved against it. With no session cwd the workdir
// goes to the executor as given (empty = the executor's default).
func sessionWorkdir(sessionCwd, workdir string) string {
	switch {
	case sessionCwd == "":
		return workdir
	case workdir == "":
		return sessionCwd
	case filepath.IsAbs(workdir):
		return workdir
	}
	return filepath.Join(sessionCwd, workdir)
}

// run hands validated arguments to the executor, which resolves the spec
// (its default workdir, the timeout's default and maximum) once.
func (t *bashTool) run(ctx context.Context, caller tools.Caller, args bashArgs, raw RawOutput, live tools.Live) tools.Result {
	spec := executor.Spec{
		Command: args.Command,
		Workdir: sessionWorkdir(caller.Cwd, args.Workdir),
		// In the sandbox the session's directory and its other roots are
		// what may be written, wherever the model points the command.
		Root:    caller.Cwd,
		Roots:   caller.Roots,
		Timeout: args.Timeout,
		// Foreground runs carry the owner too, so a closing session's
		// KillOwned reaches whatever it still has running.
		Owner: caller.SessionID,
		// Confined when the call was approved to run in the sandbox; what
		// the model reads is the same either way.
		Sandboxed: tools.Sandboxed(ctx),
	}
	raw.Sandboxed = spec.Sandboxed
	mark := measure(t.changes, caller)
	if args.Background {
		return t.start(ctx, caller, spec, raw, mark)
	}
	if live != nil {
		spec.Observe = func(s executor.Stream, p []byte, spill string) {
			live(tools.Chunk{Stream: s.String(), Data: p, FullOutput: spill})
		}
	}
	res, err := t.runner.Run(ctx, spec)
	// Measured whatever the outcome: an aborted command may have changed
	// files before it was stopped.
	return withChanges(t.runResult(ctx, args, raw, res, err), show(mark.End()))
}

// runResult is a foreground run's result.
func (t *bashTool) runResult(ctx context.Context, args bashArgs, raw RawOutput, res executor.Result, err error) tools.Result {
	if res.Workdir != "" {
		raw.Cwd = res.Workdir
	}
	if err != nil {
		if errors.Is(err, executor.ErrAborted) || ctx.Err() != nil {
			return errorResult(raw, executor.ErrAborted.Error())
		}
		return errorResult(raw, err.Error())
	}
	exit := &tools.Exit{Signal: res.Signal}
	raw.TimedOut = res.TimedOut
	raw.Signal = res.Signal
	if res.Signal == "" {
		code := res.ExitCode
		raw.ExitCode = &code
		exit.Code = &code
	}
	for _, o := range []executor.Output{res.Stdout, res.Stderr} {
		if o.Truncated {
			raw.Truncated = true
			if o.SpillPath != "" {
				raw.SpillPaths = append(raw.SpillPaths, o.SpillPath)
			}
		}
	}
	// The effective timeout is the executor's; the limits' reading of the
	// request only stands in when a result does not carry it.
	timeout := res.Timeout
	if timeout <= 0 {
		timeout = t.limits.Timeout(args.Timeout)
	}
	text, notes := formatRun(res, timeout)
	r := result(text, raw)
	r.Exit = exit
	r.Notes = notes
	return r
}

// start launches a background task. A task that cannot start is an error
// result, like a foreground spawn failure. ctx (the call's) bounds only
// the start: a cancelled turn does not wait for a container being made.
func (t *bashTool) start(ctx context.Context, caller tools.Caller, spec executor.Spec, raw RawOutput, mark *changes.Mark) tools.Result {
	spec.Observe = nil
	// The measure is kept under the task's id before the task can end.
	registered := false
	spec.Registered = func(id string) {
		registered = true
		t.pending.add(id, caller.SessionID, mark)
	}
	id, err := t.runner.StartContext(ctx, spec)
	if !registered {
		mark.Discard()
	}
	raw.TaskID = id
	if id != "" {
		// The directory the executor resolved and recorded on the task.
		if info, ierr := t.tasks.Info(id); ierr == nil && info.Workdir != "" {
			raw.Cwd = info.Workdir
		}
	}
	if err != nil {
		return errorResult(raw, err.Error())
	}
	t.log.Debug("background task started", zap.String("task", id), zap.String("session", caller.SessionID))
	return result("started background task "+id, raw)
}
