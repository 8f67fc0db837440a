package transcript_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestHasWord(t *testing.T) {
	for _, c := range []struct {
		s, w string
		want bool
	}{
		{"fg-job", "fg-job", true},
		{"(exec -a fg-job sleep 30) & wait", "fg-job", true},
		{": fg-job; echo", "fg-job", true},
		{"fg-job2 30", "fg-job", false},
		{"xfg-job", "fg-job", false},
		{"fg-jobs fg-job", "fg-job", true},
		{"a-fg-job", "fg-job", false},
		{"", "fg-job", false},
	} {
		if got := hasWord(c.s, c.w); got != c.want {
			t.Errorf("hasWord(%q, %q) = %v, want %v", c.s, c.w, got, c.want)
		}
	}
}

// TestFindProcs checks the harness's eyes on a real process: found by its
// mark and its token, not by another token or a longer mark, and no longer
// found once it is a zombie (nobody has reaped it yet).
func TestFindProcs(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	token := randomToken()
	cmd := exec.Command("bash", "-c", "exec -a find-procs-job sleep 30")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DSH_TRANSCRIPT_RUN=" + token}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	pid := cmd.Process.Pid
	found := func() []ourProc { return findProcs([]string{"other", token}, "find-procs-job") }
	// bash execs sleep under the mark; until then the mark is only in its
	// -c text, which counts as well. While the exec is under way, /proc
	// may read an empty command line or environment (CI saw it once), so
	// the checks below wait until the process has the mark as its name.
	for {
		if got := found(); len(got) == 1 && len(got[0].argv) > 0 && got[0].argv[0] == "find-procs-job" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the marked process was never found: %v", found())
		}
		time.Sleep(pollInterval)
	}
	if got := found(); len(got) != 1 || got[0].pid != pid {
		t.Fatalf("found %v, want pid %d", got, pid)
	}
	if got := findProcs([]string{"other"}, "find-procs-job"); len(got) != 0 {
		t.Errorf("found %v under another token", got)
	}
	if got := findProcs([]string{token}, "find-procs"); len(got) != 0 {
		t.Errorf("found %v under a mark that is only part of a word", got)
	}
	if got := findProcs([]string{token}, ""); len(got) != 1 || got[0].pid != pid {
		t.Errorf("by token alone: found %v, want pid %d", got, pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		st, ok := readStat(pid)
		if !ok {
			t.Fatal("the process was reaped by someone else")
		}
		if st.state == 'Z' {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pid %d is still in state %c", pid, st.state)
		}
		time.Sleep(pollInterval)
	}
	if got := found(); len(got) != 0 {
		t.Errorf("found the zombie: %v", got)
	}
	cmd.Wait()
	reaped = true
}
