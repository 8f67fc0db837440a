package turn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A linked file in any of the session's roots is read from disk; one in
// none of them is not.
func TestReadInRoots(t *testing.T) {
	t.Parallel()
	cwd, lib, other := t.TempDir(), t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(lib, "a.txt"), filepath.Join(other, "b.txt")} {
		if err := os.WriteFile(f, []byte("text of "+filepath.Base(f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if text, err := readInRoots(filepath.Join(lib, "a.txt"), []string{cwd, lib}); err != nil || text != "text of a.txt" {
		t.Errorf("a file in the other root: %q, %v; want its text", text, err)
	}
	if text, err := readInRoots(filepath.Join(other, "b.txt"), []string{cwd, lib}); !errors.Is(err, errOutside) {
		t.Errorf("a file outside the roots: %q, %v; want errOutside", text, err)
	}
	if _, err := readInRoots(filepath.Join(lib, "missing.txt"), []string{cwd, lib}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file in the other root: %v; want not found", err)
	}
}
