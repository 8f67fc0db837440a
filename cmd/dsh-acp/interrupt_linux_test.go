package main

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// TestExecSecondCtrlC: the first Ctrl-C says the run is waiting out its
// commands' grace; the second quits at once (exit 130) and says what it
// left — the command still running and the stored session — and the
// watchdog then ends that command, which ignores SIGTERM, as promised.
// The command ignores SIGTERM, so the run is still in its 3 s grace when
// the second Ctrl-C comes right after the first's message.
func TestExecSecondCtrlC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := writeScript(t, bashCall("", "trap '' TERM; echo pid=$$ .; sleep 60; echo not-ended"), `{"text":"Done."}`)
	term := newTerminal(t)
	cmd, done := startOnTerminal(t, term, []string{"DSH_STATE_DIR=" + t.TempDir(), "NO_COLOR=1"}, nil, "exec", "--script", script, "--yes", "--cwd", t.TempDir(), "go")
	// The title shows "pid=$$ .;", the output "pid=<n> .".
	m := regexp.MustCompile(`pid=(\d+) \.\r\n`).FindStringSubmatch(term.waitFor(ctx, " .\r\n"))
	if m == nil {
		t.Fatalf("no pid in %q", term.shown())
	}
	pid, _ := strconv.Atoi(m[1])
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	term.waitFor(ctx, "press Ctrl-C again to quit now")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(ctx, t, done); code != 130 {
		t.Errorf("exit %d\n%q", code, term.shown())
	}
	out := term.shown()
	for _, want := range []string{"its commands get SIGTERM and up to 3s to end", "quit at once: 1 command(s) still running", "the watchdog ends them", "keeps what was stored before this moment (dsh-acp exec --resume "} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%q", want, out)
		}
	}
	// The watchdog ends what was left: SIGKILL after the grace.
	testutil.WaitGone(t, ctx, pid)
}
