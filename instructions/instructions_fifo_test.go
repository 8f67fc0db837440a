//go:build unix

package instructions_test

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/instructions"
)

// A FIFO named .git (or HEAD in it), which a command in the project can
// make, must not hang every prompt: the branch is just not known. (Without
// the fix Load blocks in open(2) for ever.)
func TestInstructionsGitFIFONeverBlocks(t *testing.T) {
	t.Parallel()
	for _, fifo := range []string{".git", filepath.Join(".git", "HEAD")} {
		cwd := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cwd, fifo)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(cwd, fifo), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte("be brief\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var in instructions.Reader
		set, _ := in.Load(cwd, "")
		if set.Branch != "" || set.Detached != "" || len(set.Files) != 1 {
			t.Errorf("%s a FIFO: %+v", fifo, set)
		}
	}
}

// A huge AGENTS.md costs what is shown of it (MaxInstructions), not its
// size. Not parallel: it measures the bytes allocated.
func TestInstructionsHugeFileBounded(t *testing.T) {
	cwd := t.TempDir()
	f, err := os.Create(filepath.Join(cwd, "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var in instructions.Reader
	set, _ := in.Load(cwd, "")
	runtime.ReadMemStats(&after)
	if len(set.Files) != 1 || !set.Files[0].Truncated {
		t.Fatalf("instructions: %d files", len(set.Files))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("reading a 256 MiB AGENTS.md allocated %d MiB", grew>>20)
	}
}
