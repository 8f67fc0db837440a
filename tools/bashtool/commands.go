package bashtool

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TaskLister lists an owner's background tasks; the executor is one.
type TaskLister interface {
	List(owner string) []executor.TaskInfo
}

// ListTasks answers /tasks: the caller's session's background tasks, oldest
// first, with id, status, age and command. A caller with no session has
// none.
func (s *Set) ListTasks(caller tools.Caller) string {
	var infos []executor.TaskInfo
	if s.lister != nil && caller.SessionID != "" {
		infos = s.lister.List(caller.SessionID)
	}
	return formatTasks(infos, time.Now())
}

// KillTask answers /kill exactly as bash_kill answers the model, ownership
// fence included, once the task has ended (bounded by the kill grace), so
// a /tasks right after shows it killed.
func (s *Set) KillTask(caller tools.Caller, id string) string {
	return s.kill.run(caller, taskCall{shownID: id, id: id}, true).Text
}

// maxShownCommand bounds a command in the /tasks list, in runes.
const maxShownCommand = 80

func formatTasks(infos []executor.TaskInfo, now time.Time) string {
	if len(infos) == 0 {
		return "This session has no background tasks."
	}
	var b strings.Builder
	b.WriteString("Background tasks of this session:\n")
	for _, ti := range infos {
		age := now.Sub(ti.Started).Truncate(time.Second)
		if age < 0 {
			age = 0
		}
		fmt.Fprintf(&b, "- %s · %s · started %s ago · %s\n", ti.ID, taskState(ti.Status), age, code(shortCommand(ti.Command)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// taskState is the task's status for a person.
func taskState(s executor.Status) string {
	switch s.State {
	case executor.Running:
		return "running"
	case executor.Completed:
		return fmt.Sprintf("completed, exit code %d", s.ExitCode)
	case executor.Killed:
		if s.Signal != "" {
			return "killed by " + s.Signal
		}
		return "killed"
	case executor.Failed:
		return "could not start"
	}
	return "unknown"
}

// shortCommand is the command's first line, cut to maxShownCommand runes.
func shortCommand(c string) string {
	line, rest, multi := strings.Cut(strings.TrimSpace(c), "\n")
	if utf8.RuneCountInString(line) > maxShownCommand {
		r := []rune(line)
		return string(r[:maxShownCommand]) + "…"
	}
	if multi && rest != "" {
		return line + " …"
	}
	return line
}

// code puts s in a Markdown code span whose backtick run is longer than any
// inside it.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
