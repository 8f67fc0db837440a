package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// bashTool runs a command in the foreground or starts a background task.
type bashTool struct {
	exec        executor.Executor
	log         *zap.Logger
	description string
	schema      json.RawMessage
}

var _ tools.Tool = (*bashTool)(nil)

func (t *bashTool) Name() string            { return NameBash }
func (t *bashTool) Description() string     { return t.description }
func (t *bashTool) Schema() json.RawMessage { return t.schema }

// Describe reads what it can from arguments that may not validate, so the
// editor shows the command even when the call is about to be rejected.
func (t *bashTool) Describe(caller tools.Caller, args json.RawMessage) tools.Display {
	d := tools.Display{Title: NameBash, Kind: kindExecute}
	obj, err := parseObject(args)
	if err != nil {
		return d
	}
	if cmd, _, _ := obj.str("command"); commandTitle(cmd) != "" {
		d.Title = commandTitle(cmd)
	}
	d.Description, _, _ = obj.str("description")
	// A foreground command streams its output while it runs; a background
	// start returns at once and is read with bash_output.
	d.Live = true
	if raw, ok := obj.lookup("run_in_background"); ok {
		var bg bool
		if json.Unmarshal(raw, &bg) == nil && bg {
			d.Live = false
		}
	}
	workdir, _, _ := obj.str("workdir")
	d.Cwd = sessionWorkdir(caller.Cwd, workdir)
	return d
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

func (t *bashTool) Run(ctx context.Context, call tools.Call) tools.Result {
	d := t.Describe(call.Caller, call.Args)
	args, err := parseBashArgs(call.Args)
	if err != nil {
		return errorResult(d, err.Error())
	}
	spec, err := t.exec.Resolve(executor.Spec{
		Command: args.Command,
		Workdir: sessionWorkdir(call.Caller.Cwd, args.Workdir),
		Timeout: args.Timeout,
		// Foreground runs carry the owner too, so a closing session's
		// KillOwned reaches whatever it still has running.
		Owner: call.Caller.SessionID,
	})
	if err != nil {
		return errorResult(d, err.Error())
	}
	d.Cwd = spec.Workdir
	if args.Background {
		return t.start(call.Caller, spec, d)
	}
	if live := call.Live; live != nil {
		spec.Observe = func(s executor.Stream, p []byte) { live(s.String(), p) }
	}
	res, err := t.exec.Run(ctx, spec)
	if err != nil {
		if errors.Is(err, executor.ErrAborted) || ctx.Err() != nil {
			return errorResult(d, executor.ErrAborted.Error())
		}
		return errorResult(d, err.Error())
	}
	if res.Workdir != "" {
		d.Cwd = res.Workdir
	}
	d.TimedOut = res.TimedOut
	d.Signal = res.Signal
	if res.Signal == "" {
		code := res.ExitCode
		d.ExitCode = &code
	}
	for _, o := range []executor.Output{res.Stdout, res.Stderr} {
		if o.Truncated {
			d.Truncated = true
			if o.SpillPath != "" {
				d.SpillPaths = append(d.SpillPaths, o.SpillPath)
			}
		}
	}
	return tools.Result{Text: formatRun(res, spec.Timeout), Display: d}
}

// start launches a background task. A task that cannot start is an error
// result, like a foreground spawn failure.
func (t *bashTool) start(caller tools.Caller, spec executor.Spec, d tools.Display) tools.Result {
	spec.Observe = nil
	id, err := t.exec.Start(spec)
	d.TaskID = id
	if err != nil {
		return errorResult(d, err.Error())
	}
	t.log.Debug("background task started", zap.String("task", id), zap.String("session", caller.SessionID))
	return tools.Result{Text: "started background task " + id, Display: d}
}

// errorResult is an is-error result whose text is "Error: <message>".
func errorResult(d tools.Display, msg string) tools.Result {
	return tools.Result{Text: "Error: " + msg, IsError: true, Display: d}
}
