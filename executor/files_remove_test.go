package executor_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Remove, directly and under a policy (what /undo does to a file a call
// made): a file goes; a link goes, not what it names; a directory and a
// missing file are errors that say so; under a policy, a file outside, or
// reached through a link to a directory outside, is left.
func TestFilesRemove(t *testing.T) {
	base := t.TempDir()
	work, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	checked := executor.CheckedFiles{Allow: func(real string, write bool) error {
		if write && (real == outside || strings.HasPrefix(real, outside+"/")) {
			return errors.New("outside the session's directory")
		}
		return nil
	}}
	for name, files := range map[string]executor.Files{"host": executor.HostFiles{}, "checked": checked} {
		t.Run(name, func(t *testing.T) {
			for _, d := range []string{work, outside, filepath.Join(work, "dir")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { os.RemoveAll(work); os.RemoveAll(outside) })
			target := filepath.Join(outside, "kept")
			for _, f := range []string{filepath.Join(work, "a"), target} {
				if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(work, "link")); err != nil {
				t.Fatal(err)
			}
			if err := files.Remove(filepath.Join(work, "a")); err != nil {
				t.Errorf("Remove(a) = %v", err)
			}
			if _, err := os.Lstat(filepath.Join(work, "a")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a after Remove: %v, want gone", err)
			}
			if err := files.Remove(filepath.Join(work, "a")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Remove of a missing file = %v, want fs.ErrNotExist", err)
			}
			if err := files.Remove(filepath.Join(work, "dir")); !executor.ErrIsDir(err) {
				t.Errorf("Remove(dir) = %v, want a directory error", err)
			}
			if err := files.Remove(filepath.Join(work, "link")); err != nil {
				t.Errorf("Remove(link) = %v", err)
			}
			if _, err := os.Lstat(filepath.Join(work, "link")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("link after Remove: %v, want gone", err)
			}
			if name == "checked" {
				if err := files.Remove(target); err == nil {
					t.Error("Remove outside = nil, want refused")
				}
				// A link to a directory outside, on the way: its files are
				// outside.
				if err := os.Symlink(outside, filepath.Join(work, "via")); err != nil {
					t.Fatal(err)
				}
				if err := files.Remove(filepath.Join(work, "via", "kept")); err == nil {
					t.Error("Remove through a directory link = nil, want refused")
				}
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("the file outside was touched: %v", err)
			}
		})
	}
}
