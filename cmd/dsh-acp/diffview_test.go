package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// diffProject is a directory with a text file, a binary file and a large
// text file, and a script whose one command changes all three and
// creates a fourth.
func diffProject(t *testing.T) (dir, script string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("f.txt", []byte("one\ntwo\nthree\n"))
	write("bin.dat", []byte{0, 1, 2, 3})
	var big strings.Builder
	for i := range 2000 {
		big.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	write("big.txt", []byte(big.String()))
	script = writeScript(t,
		bashCall("", "sed -i.bak s/two/TWO/ f.txt && rm f.txt.bak && echo new > g.txt && printf '\\000\\005' > bin.dat && sed -i.bak 's/x/y/' big.txt && rm big.txt.bak"),
		`{"text":"Done."}`)
	return dir, script
}

// TestExecPrintsDiffs: exec prints each command's changes after it — a
// unified diff per text file, the agent's one line for a binary file, a
// one-line summary for a diff too long to read — plain when piped, and
// nothing of them with --diffs off.
func TestExecPrintsDiffs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, diffs := range []string{"on", "off"} {
		dir, script := diffProject(t)
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, binPath, "exec", "--script", script, "--yes", "--cwd", dir, "--diffs", diffs, "change things")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + t.TempDir()}
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("--diffs %s: %v\n%s%s", diffs, err, out.String(), errb.String())
		}
		got := out.String()
		want := []string{
			"--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
			"--- /dev/null\n+++ b/g.txt\n@@ -0,0 +1 @@\n+new\n",
			"bin.dat: binary file changed\n",
			"big.txt: +",
			" lines (a diff of ",
		}
		for _, w := range want {
			if has := strings.Contains(got, w); has != (diffs == "on") {
				t.Errorf("--diffs %s: output has %q: %v\n%s", diffs, w, has, got)
			}
		}
		if strings.Contains(got, "\x1b[") || !strings.HasSuffix(got, "Done.\n") {
			t.Errorf("--diffs %s: piped output:\n%q", diffs, got)
		}
	}
}

// TestExecDiffsColoured: on a terminal the diff is coloured; NO_COLOR
// keeps it plain.
// The colours a terminal is sent, as bytes (the exec client's own).
const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiReset = "\x1b[0m"
	ansiDim   = "\x1b[2m"
)

func TestExecDiffsColoured(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, noColor := range []bool{false, true} {
		dir, script := diffProject(t)
		env := []string{"DSH_STATE_DIR=" + t.TempDir()}
		if noColor {
			env = append(env, "NO_COLOR=1")
		}
		term := newTerminal(t)
		_, done := startOnTerminal(t, term, env, nil, "exec", "--script", script, "--yes", "--cwd", dir, "change things")
		if code := waitExit(ctx, t, done); code != 0 {
			t.Fatalf("exit %d:\n%q", code, term.shown())
		}
		shown := term.waitFor(ctx, "Done.")
		coloured := strings.Contains(shown, ansiRed+"-two"+ansiReset) && strings.Contains(shown, ansiGreen+"+TWO"+ansiReset)
		plain := strings.Contains(shown, "-two\r\n+TWO\r\n") && !strings.Contains(shown, "\x1b[")
		if noColor && !plain || !noColor && !coloured {
			t.Errorf("NO_COLOR=%v: the terminal showed:\n%q", noColor, shown)
		}
	}
}
