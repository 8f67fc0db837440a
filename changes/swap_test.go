//go:build unix

package changes_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// secretText is what a file the sandbox denies holds (the stored key,
// another session's log): it must never reach a diff.
const secretText = "sk-SECRET-never-in-a-diff"

// A confined command renaming a link to a denied file over a file the
// tracker listed and is about to read, or over a directory it listed and
// is about to enter: a read by name follows the link, and the denied
// file's text (or its name) goes to the editor's diffs and the session
// log. Reads below the root with no link on the way leave nothing to
// follow.
func TestChangesLinkSwappedInNeverRead(t *testing.T) {
	t.Parallel()
	secretDir := t.TempDir()
	write(t, filepath.Join(secretDir, "key"), secretText)
	for _, c := range []struct {
		name string
		// runs is the fewest runs: a directory's window (listed, then
		// entered) is narrower than a file's.
		runs   int
		attack func(t testing.TB, root string) *testutil.Swapper
	}{
		{"file", 300, func(t testing.TB, root string) *testutil.Swapper {
			return testutil.SwapLink(t, filepath.Join(root, "key"), filepath.Join(secretDir, "key"), []byte("plain\n"))
		}},
		{"directory", 3000, func(t testing.TB, root string) *testutil.Swapper {
			return testutil.SwapDirLink(t, filepath.Join(root, "sub"), secretDir)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			write(t, filepath.Join(root, "sub", "notes.txt"), "plain\n")
			// Walked whole at every run: each walk lists sub, then enters it.
			tr := changes.New(changes.Options{NoEvents: true})
			defer tr.Close()
			attack := c.attack(t, root)
			runs := 0
			for i := 0; i < 200000 && (i < c.runs || attack.Swaps() < 300); i++ {
				m := tr.Begin(changes.Key{Session: "s", Root: root})
				if m == nil {
					t.Fatal("Begin = nil")
				}
				for _, ch := range m.End() {
					if strings.Contains(ch.New.Text, secretText) || strings.Contains(ch.Old.Text, secretText) {
						attack.Stop()
						t.Fatalf("the denied file's text is in a diff after %d runs: %s", runs, ch.Path)
					}
					if filepath.Base(ch.Path) == "key" && filepath.Dir(ch.Path) != root {
						attack.Stop()
						t.Fatalf("the walk listed the denied directory after %d runs: %s", runs, ch.Path)
					}
				}
				runs++
			}
			if swaps := attack.Stop(); swaps == 0 {
				t.Fatalf("no attack: no link swapped in over %d runs", runs)
			}
			t.Logf("%d links swapped in over %d runs", attack.Swaps(), runs)
		})
	}
}
