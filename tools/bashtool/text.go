package bashtool

import (
	"fmt"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// unavailable stands in for a spill file that could not be written.
const unavailable = "(unavailable)"

func pathOrUnavailable(p string) string {
	if p == "" {
		return unavailable
	}
	return p
}

// truncationNote says where a truncated stream's full output is.
func truncationNote(o executor.Output) string {
	return "[output truncated; full output: " + pathOrUnavailable(o.SpillPath) + "]"
}

// withTruncationNote appends the truncation note to a stream's kept tail.
func withTruncationNote(o executor.Output) string {
	if !o.Truncated {
		return o.Text
	}
	return o.Text + "\n" + truncationNote(o)
}

// appendStderr adds the [stderr] section, separated by a newline only when
// the text so far is non-empty and does not already end in one.
func appendStderr(b *strings.Builder, stderr string) {
	if stderr == "" {
		return
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("[stderr]\n")
	b.WriteString(stderr)
}

// formatRun builds a foreground result's text exactly as tool-text.md does,
// and beside it the notes: the lines of that text a terminal showing the
// live output cannot show (where a truncated stream went, the timeout).
// timeout is the effective timeout, used for the timed-out marker when the
// executor's result does not carry one.
func formatRun(r executor.Result, timeout time.Duration) (text string, notes []string) {
	var b strings.Builder
	for _, o := range []executor.Output{r.Stdout, r.Stderr} {
		if o.Truncated {
			notes = append(notes, truncationNote(o))
		}
	}
	b.WriteString(withTruncationNote(r.Stdout))
	appendStderr(&b, withTruncationNote(r.Stderr))
	if b.Len() == 0 {
		b.WriteString("(no output)")
	}
	var markers []string
	if r.TimedOut {
		if r.Timeout > 0 {
			timeout = r.Timeout
		}
		m := fmt.Sprintf("[timed out after %dms]", timeout.Milliseconds())
		markers = append(markers, m)
		notes = append(notes, m)
	}
	switch {
	case r.Signal != "":
		markers = append(markers, "[killed by signal: "+r.Signal+"]")
	case r.ExitCode != 0:
		markers = append(markers, fmt.Sprintf("[exit code: %d]", r.ExitCode))
	}
	if len(markers) > 0 {
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Join(markers, "\n"))
	}
	return b.String(), notes
}

// formatRead builds bash_output's text: the unread output, a note when part
// of it was dropped from memory, and one status line.
func formatRead(r executor.Read) string {
	var b strings.Builder
	b.WriteString(r.Stdout.Text)
	appendStderr(&b, r.Stderr.Text)
	dropped := r.Stdout.Dropped > 0 || r.Stderr.Dropped > 0
	if b.Len() == 0 && !dropped {
		b.WriteString("(no new output)")
	}
	if dropped {
		// With nothing kept the note stands alone: "(no new output)" would
		// contradict it.
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("[some output was dropped from memory; full output: " +
			pathOrUnavailable(r.Stdout.SpillPath) + ", " + pathOrUnavailable(r.Stderr.SpillPath) + "]")
	}
	b.WriteString("\n" + statusLine(r.Status))
	return b.String()
}

// statusLine is the one line that says where a background task is. Failed
// tasks never get one (see the package comment); the fallthrough only keeps
// the function total.
func statusLine(s executor.Status) string {
	switch s.State {
	case executor.Running:
		return "[status: running]"
	case executor.Completed:
		return fmt.Sprintf("[status: completed, exit code: %d]", s.ExitCode)
	case executor.Killed:
		if s.Signal != "" {
			return "[status: killed by " + s.Signal + "]"
		}
	}
	return "[status: killed]"
}

// goneText is what a task tool says about a task of the session that the
// previous dsh-acp process ran: it was stopped when that process ended.
func goneText(id string) string {
	return "task " + id + " is gone: it was stopped when dsh-acp restarted"
}

// GoneNotice is the one notice the first model request after a session is
// loaded carries when tasks of it were running when the agent stopped.
func GoneNotice(ids []string) string {
	if len(ids) == 1 {
		return "background bash task " + ids[0] + " is gone: it was stopped when dsh-acp restarted. Its output is lost."
	}
	return "background bash tasks " + strings.Join(ids, ", ") + " are gone: they were stopped when dsh-acp restarted. Their output is lost."
}
