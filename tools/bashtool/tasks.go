package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// outputTool is bash_output.
type outputTool struct {
	exec   executor.Executor
	schema json.RawMessage
}

// killTool is bash_kill.
type killTool struct {
	exec   executor.Executor
	schema json.RawMessage
}

var (
	_ tools.Tool = (*outputTool)(nil)
	_ tools.Tool = (*killTool)(nil)
)

func (t *outputTool) Name() string            { return NameOutput }
func (t *outputTool) Description() string     { return outputDescription }
func (t *outputTool) Schema() json.RawMessage { return t.schema }

func (t *outputTool) Describe(_ tools.Caller, args json.RawMessage) tools.Display {
	id := describeTaskID(args)
	return tools.Display{Title: outputTitle(id), Kind: kindRead, TaskID: id}
}

func (t *outputTool) Run(_ context.Context, call tools.Call) tools.Result {
	d := t.Describe(call.Caller, call.Args)
	id, info, res, ok := accessTask(t.exec, call)
	if !ok {
		return withDisplay(res, d)
	}
	d.Cwd = info.Workdir
	r, err := t.exec.Read(id)
	if err != nil {
		return withDisplay(taskError(id, fmt.Errorf("read task %s: %w", id, err)), d)
	}
	if r.Status.State == executor.Failed {
		return errorResult(d, failedText(id, r.Status))
	}
	displayStatus(&d, r.Status)
	for _, c := range []executor.Chunk{r.Stdout, r.Stderr} {
		if c.Dropped > 0 {
			d.Truncated = true
		}
		if c.SpillPath != "" {
			d.SpillPaths = append(d.SpillPaths, c.SpillPath)
		}
	}
	return tools.Result{Text: formatRead(r), Display: d}
}

func (t *killTool) Name() string            { return NameKill }
func (t *killTool) Description() string     { return killDescription }
func (t *killTool) Schema() json.RawMessage { return t.schema }

func (t *killTool) Describe(_ tools.Caller, args json.RawMessage) tools.Display {
	id := describeTaskID(args)
	return tools.Display{Title: killTitle(id), Kind: kindOther, TaskID: id}
}

func (t *killTool) Run(_ context.Context, call tools.Call) tools.Result {
	d := t.Describe(call.Caller, call.Args)
	id, info, res, ok := accessTask(t.exec, call)
	if !ok {
		return withDisplay(res, d)
	}
	d.Cwd = info.Workdir
	k, err := t.exec.Kill(id)
	if err != nil {
		return withDisplay(taskError(id, fmt.Errorf("kill task %s: %w", id, err)), d)
	}
	displayStatus(&d, k.Status)
	if k.AlreadyFinished {
		return tools.Result{Text: "task " + id + " had already finished", Display: d}
	}
	return tools.Result{Text: "killed background task " + id, Display: d}
}

// accessTask validates task_id and applies the ownership fence before any
// output is read or any signal sent: the owner recorded on the task at spawn
// must be the caller's session, unless the task has no owner. A caller with
// no session cannot touch an owned task. ok is false when res is the answer.
func accessTask(exec executor.Executor, call tools.Call) (id string, info executor.TaskInfo, res tools.Result, ok bool) {
	id, err := parseTaskID(call.Args)
	if err != nil {
		return id, info, errorResult(tools.Display{}, err.Error()), false
	}
	info, err = exec.Info(id)
	if err != nil {
		return id, info, taskError(id, err), false
	}
	if info.Owner != "" && info.Owner != call.Caller.SessionID {
		return id, info, errorResult(tools.Display{}, "task "+id+" belongs to another session"), false
	}
	return id, info, tools.Result{}, true
}

// failedText is what bash_output says about a task that could not start:
// the same spawn failure bash reported as an error when starting it, since
// no status line of tool-text.md is true of a process that never ran.
func failedText(id string, s executor.Status) string {
	if s.Err != nil {
		return s.Err.Error()
	}
	return "task " + id + " could not start"
}

// taskError maps an executor error about a task to the model's text.
func taskError(id string, err error) tools.Result {
	if errors.Is(err, executor.ErrUnknownTask) {
		return errorResult(tools.Display{}, fmt.Sprintf("unknown bash task %q", id))
	}
	return errorResult(tools.Display{}, err.Error())
}

func withDisplay(r tools.Result, d tools.Display) tools.Result {
	r.Display = d
	return r
}

func displayStatus(d *tools.Display, s executor.Status) {
	switch s.State {
	case executor.Completed:
		code := s.ExitCode
		d.ExitCode = &code
	case executor.Killed:
		d.Signal = s.Signal
	}
}

// describeTaskID reads task_id leniently for the pre-run presentation.
func describeTaskID(args json.RawMessage) string {
	obj, err := parseObject(args)
	if err != nil {
		return ""
	}
	id, _, _ := obj.str("task_id")
	return id
}
