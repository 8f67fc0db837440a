package bashtool

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// RawOutput is what the editor gets beside a result's text (tools.Result.Raw,
// ACP's rawOutput): the structured facts the text was written from.
type RawOutput struct {
	// ExitCode is set when a process exited with a code.
	ExitCode *int `json:"exitCode,omitempty"`
	// Signal names the signal that ended the process.
	Signal string `json:"signal,omitempty"`
	// TimedOut: the executor's timer fired.
	TimedOut bool `json:"timedOut,omitempty"`
	// Truncated: some output was kept only in a spill file.
	Truncated bool `json:"truncated,omitempty"`
	// SpillPaths lists the spill files holding full output.
	SpillPaths []string `json:"spillPaths,omitempty"`
	// TaskID is the background task this call started or addressed.
	TaskID string `json:"taskId,omitempty"`
	// Cwd is the directory the command ran in, if any.
	Cwd string `json:"cwd,omitempty"`
	// IsError mirrors the result's IsError.
	IsError bool `json:"isError,omitempty"`
	// Sandboxed: the command ran (or was to run) confined in the sandbox.
	Sandboxed bool `json:"sandboxed,omitempty"`
	// ChangedFiles counts the files the command created, changed or
	// deleted under the session's directory; the editor gets the diffs.
	ChangedFiles int `json:"changedFiles,omitempty"`
}

// failed: the command ran and did not succeed.
func (o RawOutput) failed() bool {
	return (o.ExitCode != nil && *o.ExitCode != 0) || o.Signal != "" || o.TimedOut
}

// status records a task's end the way a foreground exit is recorded.
func (o *RawOutput) status(s executor.Status) {
	switch s.State {
	case executor.Completed:
		code := s.ExitCode
		o.ExitCode = &code
	case executor.Killed:
		o.Signal = s.Signal
	}
}

// result is a result that is not an error, with its raw output.
func result(text string, raw RawOutput) tools.Result {
	return tools.Result{Text: text, Failed: raw.failed(), Raw: raw}
}

// errorResult is an is-error result whose text is "Error: <message>".
func errorResult(raw RawOutput, msg string) tools.Result {
	return skipped(raw, "Error: "+msg)
}

// skipped is an is-error result with the text as given.
func skipped(raw RawOutput, text string) tools.Result {
	raw.IsError = true
	return tools.Result{Text: text, IsError: true, Raw: raw}
}

// maxTitleRunes bounds a command title: an editor shows it on one line, and a
// pasted script would otherwise fill the panel.
const maxTitleRunes = 500

// commandTitle renders a command on one line, and says whether that line
// shows all of it. A command of several lines shows its first and how many
// follow ("make (+2 more lines)"): joined into one line, a second command
// would read as arguments of the first. Every character that would not
// show as itself is made visible (tools.Visible), a tab is a space, and a
// long line keeps its head and ends in an ellipsis.
func commandTitle(cmd string) (title string, whole bool) {
	lines := strings.Split(strings.Trim(cmd, " \t\n"), "\n")
	title = strings.ReplaceAll(tools.Visible(strings.TrimRight(lines[0], " \t")), "\t", " ")
	whole = len(lines) == 1
	if utf8.RuneCountInString(title) > maxTitleRunes {
		runes := []rune(title)
		title = strings.TrimRight(string(runes[:maxTitleRunes-1]), " ") + "…"
		whole = false
	}
	if more := len(lines) - 1; more == 1 {
		title += " (+1 more line)"
	} else if more > 1 {
		title += fmt.Sprintf(" (+%d more lines)", more)
	}
	return title, whole
}

func outputTitle(id string) string {
	if id == "" {
		return "Read output from background task"
	}
	return "Read output from background task " + id
}

func killTitle(id string) string {
	if id == "" {
		return "Kill background task"
	}
	return "Kill background task " + id
}
