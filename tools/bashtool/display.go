package bashtool

import (
	"strings"
	"unicode"
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

// commandTitle renders a command on one line: each line break, with the
// blanks around it, becomes one space, other control characters become
// spaces, and a long command keeps its head and ends in an ellipsis.
func commandTitle(cmd string) string {
	var b strings.Builder
	pendingBreak := false
	for _, r := range strings.TrimSpace(cmd) {
		switch {
		case r == '\n' || r == '\r':
			pendingBreak = true
			continue
		case pendingBreak && (r == ' ' || r == '\t'):
			continue
		}
		if pendingBreak {
			trimTrailingBlanks(&b)
			b.WriteByte(' ')
			pendingBreak = false
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	title := b.String()
	if utf8.RuneCountInString(title) <= maxTitleRunes {
		return title
	}
	runes := []rune(title)
	return strings.TrimRight(string(runes[:maxTitleRunes-1]), " ") + "…"
}

func trimTrailingBlanks(b *strings.Builder) {
	s := strings.TrimRight(b.String(), " \t")
	if len(s) == b.Len() {
		return
	}
	b.Reset()
	b.WriteString(s)
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
