//go:build unix

package repo_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/repo"
)

// An ignore file that is not a regular file has no patterns, at once: a
// FIFO as .git/info/exclude or a .gitignore (a command can make one) would
// otherwise block every walk for ever, and a link to /dev/zero never end.
// A regular one is read as before. (Without the fix this test hangs.)
func TestIgnoreFilesNeverBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo, zero, plain := filepath.Join(dir, "fifo"), filepath.Join(dir, "zero"), filepath.Join(dir, "plain")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("*.o\n# comment\nbuild/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{fifo, zero} {
		if ps := repo.ReadPatterns(f, nil); len(ps) != 0 {
			t.Errorf("%s: %d patterns, want none", f, len(ps))
		}
	}
	if ps := repo.ReadPatterns(plain, nil); len(ps) != 2 {
		t.Errorf("a regular ignore file: %d patterns, want 2", len(ps))
	}
}
