package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/agentdir"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// agentDirs lists the agent-named directories in tmp.
func agentDirs(t *testing.T, tmp string) []string {
	t.Helper()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "dsh-acp-spill-") || strings.HasPrefix(e.Name(), "dsh-acp-sandbox-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// An agent killed with SIGKILL (how editors end agents) cannot remove its
// spill directory (a command's full output) nor its sandbox's temporary
// directories: its watchdog does, once the commands are gone.
func TestLeftoversGoWithKilledAgent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		want []string // the directories the command makes
	}{
		{"unconfined", nil, []string{"dsh-acp-spill-"}},
		{"sandbox", []string{"DSH_TEST_EXECUTOR=sandbox"}, []string{"dsh-acp-spill-", "dsh-acp-sandbox-"}},
		{"sandbox nouserns", []string{"DSH_TEST_EXECUTOR=sandbox", sandbox.SimulateEnv + "=nouserns"}, []string{"dsh-acp-spill-", "dsh-acp-sandbox-"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if len(c.env) > 0 && sandbox.Require(sandbox.Probe(nil)) != nil {
				t.Skip("no sandbox on this kernel")
			}
			ctx := testutil.WithTimeout(t, 60*time.Second)
			tmp := t.TempDir()
			// Output past the in-memory tail goes to a spill file.
			p := startAgentEnv(t, scriptCall(t, `seq 1 200000; echo x > "$TMPDIR/f"; sleep 1000`, true), append(c.env, "TMPDIR="+tmp))
			sid := p.newSession(ctx, "auto")
			p.awaitResult(ctx, p.send("session/prompt", promptParams(sid, "go")))
			p.drain()
			p.waitMarked(ctx, isSleep1000)
			waitDirs(ctx, t, tmp, c.want)
			ended := time.Now()
			_ = p.cmd.Process.Kill()
			p.waitExit(ctx, true)
			p.expectNoSurvivors(ctx, ended) // the watchdog included
			if left := agentDirs(t, tmp); len(left) > 0 {
				t.Errorf("left in $TMPDIR after SIGKILL: %q", left)
			}
		})
	}
}

// waitDirs waits until tmp holds a directory of each prefix: the spill
// directory is made by the agent's reader as the output overflows.
func waitDirs(ctx context.Context, t *testing.T, tmp string, prefixes []string) {
	t.Helper()
	for {
		have := 0
		dirs := agentDirs(t, tmp)
		for _, p := range prefixes {
			for _, d := range dirs {
				if strings.HasPrefix(d, p) {
					have++
					break
				}
			}
		}
		if have == len(prefixes) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("want %q in $TMPDIR, have %q", prefixes, dirs)
		case <-time.After(5 * time.Millisecond): // nothing announces a mkdir
		}
	}
}

// At its start the agent removes what agents that are gone left in
// $TMPDIR (when their watchdog could not: killed with them, or a
// machine's crash), and nothing else: not a live agent's, not one named
// the old way, not a link, not another user's.
func TestLeftoversOfGoneAgentsRemovedAtStart(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	tmp := t.TempDir()
	self, err := agentdir.Self()
	if err != nil {
		t.Fatal(err)
	}
	// Gone: this test's pid, reused by a process started later.
	gone := agentdir.Agent{Pid: self.Pid, Start: self.Start - 1}
	mk := func(name string) string {
		t.Helper()
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "s-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "s-1", "out.log"), []byte("output\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goneDirs := []string{mk("dsh-acp-spill-" + gone.String() + "-1"), mk("dsh-acp-sandbox-" + gone.String() + "-2")}
	keep := []string{mk("dsh-acp-spill-" + self.String() + "-1"), mk("dsh-acp-sandbox-12345")}
	link := filepath.Join(tmp, "dsh-acp-spill-"+gone.String()+"-3")
	if err := os.Symlink(keep[0], link); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, link)
	if os.Getuid() == 0 {
		other := mk("dsh-acp-spill-" + gone.String() + "-4")
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, other)
	}
	p := startAgentEnv(t, writeScript(t, `{"text":"hi"}`), []string{"TMPDIR=" + tmp})
	// The sweep runs beside serving (the initialize answer does not wait
	// for it), and is done by the agent's exit at the latest.
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	_ = p.stdin.Close()
	p.waitExit(ctx, false)
	for _, d := range goneDirs {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range keep {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
