package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// outputTool is bash_output.
type outputTool struct {
	tasks  Tasks
	schema json.RawMessage
	// pending holds what tasks changed until their end is reported here.
	pending *pendingChanges
}

// killTool is bash_kill.
type killTool struct {
	tasks Tasks
	// ends, if set, tells when the killed task ended; wait bounds how long
	// a kill waits for it.
	ends   TaskEnds
	wait   time.Duration
	schema json.RawMessage
}

var (
	_ tools.Tool = (*outputTool)(nil)
	_ tools.Tool = (*killTool)(nil)
)

func (t *outputTool) Name() string            { return NameOutput }
func (t *outputTool) Description() string     { return outputDescription }
func (t *outputTool) Schema() json.RawMessage { return t.schema }

// Prepare: bash_output needs no approval; it only reads the session's own
// tasks (the ownership fence refuses others').
func (t *outputTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	tc := readTaskCall(raw)
	return tc.prepared(tools.Call{Title: outputTitle(tc.shownID), Kind: tools.KindRead}, func() tools.Result {
		return t.run(caller, tc)
	})
}

func (t *outputTool) run(caller tools.Caller, tc taskCall) tools.Result {
	id, info, res, ok := accessTask(t.tasks, caller, tc)
	if !ok {
		return res
	}
	raw := RawOutput{TaskID: tc.shownID, Cwd: info.Workdir}
	r, err := t.tasks.Read(id)
	if err != nil {
		return taskError(raw, id, fmt.Errorf("read task %s: %w", id, err))
	}
	if r.Status.State == executor.Failed {
		return errorResult(raw, failedText(id, r.Status))
	}
	raw.status(r.Status)
	for _, c := range []executor.Chunk{r.Stdout, r.Stderr} {
		if c.Dropped > 0 {
			raw.Truncated = true
		}
		if c.SpillPath != "" {
			raw.SpillPaths = append(raw.SpillPaths, c.SpillPath)
		}
	}
	out := result(formatRead(r), raw)
	if r.Status.State != executor.Running && t.pending != nil {
		// This read reports the task's end: it shows what the task changed.
		out = withChanges(out, t.pending.take(id))
	}
	return out
}

func (t *killTool) Name() string            { return NameKill }
func (t *killTool) Description() string     { return killDescription }
func (t *killTool) Schema() json.RawMessage { return t.schema }

// Prepare: bash_kill needs no approval; it only stops the session's own
// tasks.
func (t *killTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	tc := readTaskCall(raw)
	return tc.prepared(tools.Call{Title: killTitle(tc.shownID), Kind: tools.KindOther}, func() tools.Result {
		return t.run(caller, tc, false)
	})
}

// run kills the task; with waitEnd (the user's /kill) it also waits for
// the end it caused, so what /tasks shows next says "killed". bash_kill
// returns at once, as its contract says: the model reads the end with
// bash_output or its notice.
func (t *killTool) run(caller tools.Caller, tc taskCall, waitEnd bool) tools.Result {
	id, info, res, ok := accessTask(t.tasks, caller, tc)
	if !ok {
		return res
	}
	raw := RawOutput{TaskID: tc.shownID, Cwd: info.Workdir}
	var ended <-chan executor.Status
	if waitEnd {
		var stop func()
		ended, stop = t.watchEnd(id)
		defer stop()
	}
	k, err := t.tasks.Kill(id)
	if err != nil {
		return taskError(raw, id, fmt.Errorf("kill task %s: %w", id, err))
	}
	if !k.AlreadyFinished && ended != nil {
		timer := time.NewTimer(t.wait)
		select {
		case st := <-ended:
			k.Status = st
		case <-timer.C:
		}
		timer.Stop()
	}
	raw.status(k.Status)
	if k.AlreadyFinished {
		return result("task "+id+" had already finished", raw)
	}
	return result("killed background task "+id, raw)
}

// watchEnd subscribes to the end of task id before it is killed, so the
// end cannot be missed; nil when the executor does not tell ends.
func (t *killTool) watchEnd(id string) (<-chan executor.Status, func()) {
	if t.ends == nil {
		return nil, func() {}
	}
	ch := make(chan executor.Status, 1)
	unsubscribe := t.ends.Subscribe(func(e executor.TaskEnd) {
		if e.ID == id {
			select {
			case ch <- e.Status:
			default:
			}
		}
	})
	return ch, unsubscribe
}

// taskCall is the arguments of bash_output or bash_kill, read once.
type taskCall struct {
	// shownID is task_id read leniently, for the title and raw output.
	shownID string
	// id is the validated task_id; err says why there is none.
	id  string
	err error
}

func readTaskCall(raw json.RawMessage) taskCall {
	obj, err := parseObject(raw)
	if err != nil {
		return taskCall{err: err}
	}
	tc := taskCall{}
	tc.shownID, _, _ = obj.str("task_id")
	tc.id, tc.err = obj.requiredString("task_id")
	return tc
}

func (tc taskCall) prepared(call tools.Call, run func() tools.Result) tools.Prepared {
	return tools.Prepared{
		Call: call,
		Run:  func(context.Context, tools.Live) tools.Result { return run() },
		Skip: func(text string) tools.Result { return skipped(RawOutput{TaskID: tc.shownID}, text) },
	}
}

// accessTask applies the argument check and the ownership fence before any
// output is read or any signal sent: the owner recorded on the task at spawn
// must be the caller's session, unless the task has no owner. A caller with
// no session cannot touch an owned task. ok is false when res is the answer.
func accessTask(tasks Tasks, caller tools.Caller, tc taskCall) (id string, info executor.TaskInfo, res tools.Result, ok bool) {
	raw := RawOutput{TaskID: tc.shownID}
	if tc.err != nil {
		return "", info, errorResult(raw, tc.err.Error()), false
	}
	id = tc.id
	info, err := tasks.Info(id)
	if err != nil {
		if errors.Is(err, executor.ErrUnknownTask) && caller.Gone != nil && caller.Gone(id) {
			return id, info, errorResult(raw, goneText(id)), false
		}
		return id, info, taskError(raw, id, err), false
	}
	if info.Owner != "" && info.Owner != caller.SessionID {
		return id, info, errorResult(raw, "task "+id+" belongs to another session"), false
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
func taskError(raw RawOutput, id string, err error) tools.Result {
	if errors.Is(err, executor.ErrUnknownTask) {
		return errorResult(raw, fmt.Sprintf("unknown bash task %q", id))
	}
	return errorResult(raw, err.Error())
}

// parseTaskID validates the task_id argument of bash_output and bash_kill.
func parseTaskID(raw json.RawMessage) (string, error) {
	tc := readTaskCall(raw)
	return tc.id, tc.err
}

// describeTaskID reads task_id leniently for the pre-run presentation.
func describeTaskID(raw json.RawMessage) string {
	return readTaskCall(raw).shownID
}
