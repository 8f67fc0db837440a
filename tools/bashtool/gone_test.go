package bashtool_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

// A task of the session from before a restart is unknown to this process's
// executor: both task tools say it is gone, in the words tool-text.md pins;
// an id the session never had stays "unknown".
func TestTaskGoneAfterRestart(t *testing.T) {
	t.Parallel()
	tb := newToolbox(t, bashtool.Options{Executor: newFake()})
	caller := tools.Caller{SessionID: "A", Cwd: "/a", Gone: func(id string) bool { return id == "bash-7" }}
	for _, tl := range []tools.Tool{tb.output, tb.kill} {
		got := run(testutil.Context(t), tl, call(caller, taskArgs("bash-7")))
		if want := "Error: task bash-7 is gone: it was stopped when dsh-acp restarted"; !got.IsError || got.Text != want {
			t.Errorf("%s on a gone task: %q (error %v), want %q", tl.Name(), got.Text, got.IsError, want)
		}
		got = run(testutil.Context(t), tl, call(caller, taskArgs("bash-8")))
		if want := `Error: unknown bash task "bash-8"`; !got.IsError || got.Text != want {
			t.Errorf("%s on an unknown task: %q, want %q", tl.Name(), got.Text, want)
		}
	}
	if got, want := bashtool.GoneNotice([]string{"bash-1", "bash-2"}), "background bash tasks bash-1, bash-2 are gone: they were stopped when dsh-acp restarted. Their output is lost."; got != want {
		t.Errorf("notice %q, want %q", got, want)
	}
}
