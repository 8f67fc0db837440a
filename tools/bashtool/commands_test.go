package bashtool_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TestTaskCommands: /tasks lists only the caller's tasks, /kill stops one
// of them and is fenced from another session's, as bash_kill is.
func TestTaskCommands(t *testing.T) {
	t.Parallel()
	workdir := t.TempDir()
	l := newLocal(t, executor.Options{DefaultWorkdir: workdir})
	s1, s2 := tools.Caller{SessionID: "s1"}, tools.Caller{SessionID: "s2"}
	if got := l.set.ListTasks(s1); got != "This session has no background tasks." {
		t.Errorf("empty list = %q", got)
	}
	l.run(t, s1, "sleep 30", map[string]any{"run_in_background": true})
	l.run(t, s2, "exit 3", map[string]any{"run_in_background": true})
	l.waitNotice(t) // s2's task ended

	list := l.set.ListTasks(s1)
	want := regexp.MustCompile("^Background tasks of this session:\n- bash-1 · running · started [0-9]+s ago · `sleep 30`$")
	if !want.MatchString(list) {
		t.Errorf("s1's list = %q", list)
	}
	if got := l.set.ListTasks(s2); !strings.Contains(got, "- bash-2 · completed, exit code 3 · started") {
		t.Errorf("s2's list = %q", got)
	}
	if got := l.set.KillTask(s2, "bash-1"); got != "Error: task bash-1 belongs to another session" {
		t.Errorf("s2 kills s1's task: %q", got)
	}
	if got := l.set.KillTask(s1, "bash-1"); got != "killed background task bash-1" {
		t.Errorf("s1 kills its task: %q", got)
	}
	if got := l.set.KillTask(s1, "bash-9"); got != `Error: unknown bash task "bash-9"` {
		t.Errorf("unknown task: %q", got)
	}
	// Right after the kill, not only once its notice came: the kill
	// waited for the end it caused.
	if got := l.set.ListTasks(s1); !strings.Contains(got, "bash-1 · killed by SIGTERM") {
		t.Errorf("right after the kill: %q", got)
	}
	l.waitNotice(t)

	// A task that takes its time to end on SIGTERM (its trap runs for a
	// second) is not shown running after its kill either.
	// (In the workdir: a sandboxed command writes nowhere else.)
	l.run(t, s1, "trap 'sleep 1; exit 3' TERM; echo ready > ready; sleep 30 & wait", map[string]any{"run_in_background": true})
	testutil.WaitFile(t, testutil.Context(t), filepath.Join(workdir, "ready")) // the trap is set
	if got := l.set.KillTask(s1, "bash-3"); got != "killed background task bash-3" {
		t.Errorf("kill of a slow task: %q", got)
	}
	if got := l.set.ListTasks(s1); strings.Contains(got, "bash-3 · running") || !strings.Contains(got, "bash-3 · ") {
		t.Errorf("right after the kill of a slow task: %q", got)
	}
	l.waitNotice(t)
}
