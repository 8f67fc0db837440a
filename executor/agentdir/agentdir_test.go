package agentdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	a := Agent{Pid: 42, Start: 123456}
	if b, err := Parse(a.String()); err != nil || b != a {
		t.Errorf("Parse(%q) = %v, %v", a.String(), b, err)
	}
	for _, bad := range []string{"", "42", "x-1", "42-x", "-1-2", "0-5"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	for name, want := range map[string]bool{
		"dsh-acp-spill-42-123456-987":   true,
		"dsh-acp-sandbox-42-123456-987": true,
		"dsh-acp-spill-987":             false, // an older agent's: whose, nobody knows
		"dsh-acp-spill-42-123456-":      false,
		"dsh-acp-mcp-42-123456-987":     false,
		"dsh-acp-session-42-123456-987": false,
		"other-42-123456-987":           false,
	} {
		if got, ok := owner(name); ok != want || (ok && got != a) {
			t.Errorf("owner(%q) = %v, %v", name, got, ok)
		}
	}
}

func TestSelfAlive(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.Pid != os.Getpid() || !self.Alive() {
		t.Errorf("Self() = %v, alive %v", self, self.Alive())
	}
	if (Agent{Pid: self.Pid, Start: self.Start + 1}).Alive() {
		t.Error("own pid with another start time: alive")
	}
}

// TestRemove: only the directories of agents that are gone go, and only
// real directories of the calling user; a live agent's, a link, an older
// name, a file and another user's directory stay.
func TestRemove(t *testing.T) {
	parent := t.TempDir()
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	// A live agent other than this one: a child, ended at the test's end.
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	start, err := proctab.StartTime(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	live := Agent{Pid: child.Process.Pid, Start: start}
	// A gone one: the same pid as the child's, an earlier start (pid reuse).
	gone := Agent{Pid: live.Pid, Start: live.Start - 1}
	mk := func(name string) string {
		t.Helper()
		p := filepath.Join(parent, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goneSpill := mk("dsh-acp-spill-" + gone.String() + "-1")
	goneSandbox := mk("dsh-acp-sandbox-" + gone.String() + "-2")
	// What a command left there: read-only directories.
	ro := filepath.Join(goneSandbox, "dsh-acp-session-3", "ro")
	if err := os.MkdirAll(filepath.Join(ro, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "x", "f"), []byte("out"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	keep := []string{
		mk("dsh-acp-spill-" + live.String() + "-1"),
		mk("dsh-acp-sandbox-" + self.String() + "-1"),
		mk("dsh-acp-spill-12345"),
	}
	file := filepath.Join(parent, "dsh-acp-spill-"+gone.String()+"-3")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	link := filepath.Join(parent, "dsh-acp-spill-"+gone.String()+"-4")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, file, link)
	if os.Getuid() == 0 {
		others := mk("dsh-acp-spill-" + gone.String() + "-5")
		if err := os.Chown(others, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, others)
	}

	removed, err := RemoveGone(parent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{goneSandbox, goneSpill}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, p := range []string{goneSpill, goneSandbox} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range append(keep, target) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	// The watchdog's sweep: one agent's, whether it runs or not.
	removed, err = Remove(parent, func(a Agent) bool { return a == live })
	if err != nil || len(removed) != 1 || removed[0] != keep[0] {
		t.Errorf("Remove(live) = %q, %v", removed, err)
	}
}
