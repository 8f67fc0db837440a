package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// storeWith makes a state directory holding sessions of these ids.
func storeWith(t *testing.T, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		s, err := st.Create(id, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runBin runs the binary with a temp HOME and returns its exit code,
// stdout and stderr.
func runBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(testutil.Context(t), binPath, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// TestSessionIDPrefixes: sessions show, sessions rm and exec --resume take
// a unique prefix of 6 characters or more; an ambiguous one is an error
// listing the sessions it could mean; a shorter one is refused; rm takes
// several ids and goes on past one it cannot delete.
func TestSessionIDPrefixes(t *testing.T) {
	t.Parallel()
	state := storeWith(t, "abcdef-1111", "abcdef-2222", "zyxwvu-3333", "qrstuv-4444")

	code, out, errb := runBin(t, "sessions", "show", "--state-dir", state, "zyxwvu")
	if code != 0 || !strings.Contains(out, "session zyxwvu-3333") {
		t.Errorf("show by prefix: exit %d %q %q", code, out, errb)
	}
	code, _, errb = runBin(t, "sessions", "show", "--state-dir", state, "abcdef")
	if code != 1 || !strings.Contains(errb, `"abcdef" is ambiguous`) || !strings.Contains(errb, "abcdef-1111") || !strings.Contains(errb, "abcdef-2222") {
		t.Errorf("ambiguous prefix: exit %d %q", code, errb)
	}
	code, _, errb = runBin(t, "sessions", "show", "--state-dir", state, "zyx")
	if code != 1 || !strings.Contains(errb, "at least 6 characters") {
		t.Errorf("short prefix: exit %d %q", code, errb)
	}
	script := writeScript(t, `{"text":"resumed"}`)
	code, out, errb = runBin(t, "exec", "--state-dir", state, "--script", script, "--resume", "abcdef", "x")
	if code != 1 || !strings.Contains(errb, "--resume: session id \"abcdef\" is ambiguous") {
		t.Errorf("exec --resume ambiguous: exit %d %q %q", code, out, errb)
	}
	code, out, errb = runBin(t, "exec", "--state-dir", state, "--script", script, "--resume", "qrstuv", "x")
	if code != 0 || !strings.Contains(out, "resumed") {
		t.Errorf("exec --resume by prefix: exit %d %q %q", code, out, errb)
	}

	code, out, errb = runBin(t, "sessions", "rm", "--state-dir", state, "abcdef-1111", "nothere", "zyxwvu")
	if code != 1 || out != "deleted session abcdef-1111\ndeleted session zyxwvu-3333\n" || !strings.Contains(errb, `"nothere" not found`) {
		t.Errorf("rm several: exit %d %q %q", code, out, errb)
	}
	code, out, _ = runBin(t, "sessions", "--ids", "--state-dir", state)
	if ids := strings.Fields(out); code != 0 || len(ids) != 2 || !strings.Contains(out, "abcdef-2222\n") || !strings.Contains(out, "qrstuv-4444\n") {
		t.Errorf("left: exit %d %q", code, out)
	}
	// The one left of the two abcdef sessions is now unique.
	if code, out, errb := runBin(t, "sessions", "rm", "--state-dir", state, "abcdef"); code != 0 || out != "deleted session abcdef-2222\n" {
		t.Errorf("rm by a prefix now unique: exit %d %q %q", code, out, errb)
	}
}

// TestSessionsPrune: prune --older-than deletes the sessions not updated
// for that long, asks nothing, and says what it deleted; it needs the
// duration, in Go's form.
func TestSessionsPrune(t *testing.T) {
	t.Parallel()
	state := storeWith(t, "prune-aaaa", "prune-bbbb")
	code, out, errb := runBin(t, "sessions", "prune", "--state-dir", state, "--older-than", "1000h")
	if code != 0 || !strings.HasPrefix(out, "pruned 0 session(s) not updated for 1000h0m0s (since ") || strings.Contains(out, "deleted") {
		t.Errorf("nothing that old: exit %d %q %q", code, out, errb)
	}
	code, out, errb = runBin(t, "sessions", "prune", "--state-dir", state, "--older-than", "1ns")
	if code != 0 || strings.Count(out, "deleted session prune-") != 2 || !strings.Contains(out, "pruned 2 session(s)") || !strings.Contains(out, filepath.Clean(state)) {
		t.Errorf("prune all: exit %d %q %q", code, out, errb)
	}
	if _, out, _ := runBin(t, "sessions", "--ids", "--state-dir", state); out != "" {
		t.Errorf("sessions left: %q", out)
	}
	for _, args := range [][]string{{"prune"}, {"prune", "--older-than", "3d"}, {"prune", "x", "--older-than", "1h"}} {
		if code, _, errb := runBin(t, append([]string{"sessions", "--state-dir", state}, args...)...); code != 2 || errb == "" {
			t.Errorf("%q: exit %d %q", args, code, errb)
		}
	}
}

// TestCompletionValues: bash completes the values of a flag that takes
// one of a few words, and stored session ids after --resume and after
// sessions show/rm — from the state directory the line names.
func TestCompletionValues(t *testing.T) {
	t.Parallel()
	state := storeWith(t, "compl-1111", "compl-2222", "other-3333")
	_, script, _ := runBin(t, "completion", "bash")
	probe := script + `
complete_line() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _dsh_acp; echo "${COMPREPLY[*]}"; }
complete_line "$BIN" exec --thinking ""
complete_line "$BIN" exec --default-mode sa
complete_line "$BIN" exec --state-dir "$STATE" --resume compl
complete_line "$BIN" sessions --state-dir "$STATE" rm ""
complete_line "$BIN" sessions ""
complete_line "$BIN" sessions show --state-dir "$STATE" oth
`
	cmd := exec.Command("bash", "-c", probe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "BIN=" + binPath, "STATE=" + state}
	b, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if err != nil || len(lines) != 6 {
		t.Fatalf("bash completion: %v\n%s", err, b)
	}
	ids := strings.Fields(lines[2])
	slices.Sort(ids)
	if lines[0] != "off high max" || lines[1] != "sandbox" || !slices.Equal(ids, []string{"compl-1111", "compl-2222"}) ||
		len(strings.Fields(lines[3])) != 3 || lines[4] != "show rm prune" || lines[5] != "other-3333" {
		t.Errorf("bash completion:\n%s", b)
	}
}
