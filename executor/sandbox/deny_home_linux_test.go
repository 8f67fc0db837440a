package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// TestNothingMadeInDeniedDirs: with the session's cwd a $HOME that holds
// the agent's directories (its state directory, and in $HOME/tmp its
// spill root and the sessions' temporary directories), a command can make
// nothing inside them — no file, link, directory or FIFO, by creating,
// linking or moving — in both modes. A planted link there would be
// followed by the unconfined agent's next write (issue 20: with Landlock
// alone, a creation right on a directory on the way to a denied path was
// inherited by the denied path).
func TestNothingMadeInDeniedDirs(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			state := filepath.Join(home, ".local", "state", "dsh-acp")
			sessions := filepath.Join(state, "sessions")
			tmp := filepath.Join(home, "tmp")
			for _, d := range []string{sessions, tmp} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(sessions, "s.jsonl"), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "notes"), []byte("mine\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			spill, err := os.MkdirTemp(tmp, "dsh-acp-spill-")
			if err != nil {
				t.Fatal(err)
			}
			own, other := filepath.Join(spill, "s-own"), filepath.Join(spill, "s-other")
			for _, d := range []string{own, other} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			c := newConfiner(t, launcher(t, m), sandbox.ConfinerOptions{TempParent: tmp, Deny: []string{state}})
			otherTmp, err := c.TempDir("other")
			if err != nil {
				t.Fatal(err)
			}
			ownTmp, err := c.TempDir("own")
			if err != nil {
				t.Fatal(err)
			}
			sandboxes := filepath.Dir(otherTmp)
			targets := []string{state, sessions, spill, other, sandboxes, otherTmp}
			before := make(map[string][]string)
			for _, d := range targets {
				before[d] = names(t, d)
			}

			// Each attempt prints its name when it succeeds.
			var script strings.Builder
			script.WriteString(`echo x > "$TMPDIR/f" || echo "own tmp: no file"` + "\n")
			for i, d := range targets {
				for _, try := range []string{
					`touch "$D/t%d"`, `ln -s /etc/hostname "$D/s%d"`, `ln "$TMPDIR/f" "$D/h%d"`,
					`mkdir "$D/d%d"`, `mkfifo "$D/p%d"`, `cp "$TMPDIR/f" "$D/c%d"`, `mv "$TMPDIR/f" "$D/m%d" && echo x > "$TMPDIR/f"`,
					`ln -s /etc/hostname "$D/s.meta.json.tmp%d"`,
				} {
					cmd := strings.ReplaceAll(try, "$D", d)
					cmd = strings.ReplaceAll(cmd, "%d", string(rune('a'+i)))
					script.WriteString(cmd + " 2>/dev/null && echo 'made: " + cmd + "'\n")
				}
			}
			script.WriteString(`echo y >> notes && echo z > "$TMPDIR/g" && echo done` + "\n")
			spec := executor.Spec{Command: script.String(), Workdir: home, Owner: "own"}
			out, ws := runConfined(t, c, spec, withSpill(own, spill))
			if !ws.Exited() || ws.ExitStatus() != 0 || strings.Contains(out, "made:") || strings.Contains(out, "own tmp") || !strings.HasSuffix(out, "done\n") {
				t.Errorf("confined in cwd %s: %v\n%s", home, ws, out)
			}
			for _, d := range targets {
				if after := names(t, d); !slices.Equal(after, before[d]) {
					t.Errorf("%s: entries %q, before %q", d, after, before[d])
				}
			}
			if b, err := os.ReadFile(filepath.Join(home, "notes")); err != nil || string(b) != "mine\ny\n" {
				t.Errorf("an existing file in the cwd: %q %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(ownTmp, "g")); err != nil {
				t.Errorf("own temporary directory: %v", err)
			}
		})
	}
}

// names lists dir's entries, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
