package bashtool

import (
	"encoding/json"
	"fmt"
	"time"
)

// The descriptions are written for the model: each line answers a question a
// model gets wrong without it (state between calls, where errors show,
// what long output looks like, what to do with servers, how to wait).

func bashDescription(def, maxT time.Duration) string {
	return fmt.Sprintf(`Run a shell command with bash -c and return its output.

- Every call starts a fresh shell: nothing persists between calls (no cd, no variables, no activated environments). To run somewhere else, set workdir instead of using cd. workdir defaults to the session's working directory; a relative workdir is resolved against it.
- description is a one-line, active-voice summary of what the command does, 5-10 words (e.g. "Run the unit tests of the parser package"). It is shown to the user and has no effect on execution.
- The result is stdout, then a [stderr] section. A failing command is not an error result: check for an [exit code: N] marker at the end (none means exit code 0). [killed by signal: NAME] and [timed out after Nms] say when the command was stopped.
- Long output keeps only its tail and ends with [output truncated; full output: <path>]; read that file (for example with grep, head or tail) when you need the rest.
- timeoutMs defaults to %s and cannot exceed %s; a longer value is cut to the maximum. On timeout the command and its children are stopped.
- Servers, watchers and anything else that runs until stopped must use run_in_background: true. The call then returns a task id at once, no timeout applies, bash_output reads what the task printed since the last read, and bash_kill stops it. A foreground command's leftover children (cmd &) are stopped when it returns, so they do not keep running.
- When a background task finishes, a notice is added to the context of your next request. It does not wake you up: to wait for a task, poll it with bash_output.`,
		durationText(def), durationText(maxT))
}

const outputDescription = `Read the output a background task (started by bash with run_in_background) printed since the previous bash_output call on it, and its status.

- The result is the new stdout, then a [stderr] section, or (no new output); then one status line: [status: running], [status: completed, exit code: N], [status: killed by SIGNAL] or [status: killed].
- Output that no longer fitted in memory is noted with the path of a file that holds all of it.
- Poll with bash_output to wait for a task or to check whether a server is up: completion notices do not wake you up.`

const killDescription = `Stop a background task started by bash with run_in_background: SIGTERM to its process group, then SIGKILL if it has not exited after a short grace.

Killing a task that already finished does nothing and says so. Use bash_output afterwards to read what it printed last.`

// durationText writes a timeout in milliseconds, the unit of timeoutMs, with
// a human reading beside it.
func durationText(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dms (%s)", ms, plural(int64(d/time.Minute), "minute"))
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%dms (%s)", ms, plural(int64(d/time.Second), "second"))
	}
	return fmt.Sprintf("%dms", ms)
}

func plural(n int64, unit string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// schemaProp is one property of a JSON Schema object.
type schemaProp struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// schemaObject is a JSON Schema for an arguments object. Extra keys are
// allowed (and ignored) so that a model adding one still gets its call run.
type schemaObject struct {
	Type       string                `json:"type"`
	Properties map[string]schemaProp `json:"properties"`
	Required   []string              `json:"required"`
}

func mustSchema(s schemaObject) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		// Only static data goes in; failing here is a programming error.
		panic(fmt.Sprintf("bashtool: marshal schema: %v", err))
	}
	return b
}

func bashSchema(def, maxT time.Duration) json.RawMessage {
	return mustSchema(schemaObject{
		Type: "object",
		Properties: map[string]schemaProp{
			"command": {Type: "string", Description: "The command to run with bash -c."},
			"description": {Type: "string", Description: "One-line, active-voice summary of what the command does, " +
				"5-10 words. Shown to the user; no effect on execution."},
			"timeoutMs": {Type: "number", Description: fmt.Sprintf("Timeout in milliseconds. Default %s, maximum %s. "+
				"Not applied with run_in_background.", durationText(def), durationText(maxT))},
			"workdir": {Type: "string", Description: "Directory to run the command in; use it instead of cd. " +
				"Defaults to the session's working directory; a relative path is resolved against it."},
			"run_in_background": {Type: "boolean", Description: "Start the command as a background task and return " +
				"its task id at once; no timeout applies. Use it for servers and watchers; read the output with " +
				"bash_output and stop the task with bash_kill."},
		},
		Required: []string{"command", "description"},
	})
}

func taskSchema(purpose string) json.RawMessage {
	return mustSchema(schemaObject{
		Type: "object",
		Properties: map[string]schemaProp{
			"task_id": {Type: "string", Description: "The id of the background task " + purpose + ` (e.g. "bash-1").`},
		},
		Required: []string{"task_id"},
	})
}
