package instructions_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/instructions"
)

// A session's other roots give their instruction files too, from their
// repository's root down, each file once, after the user's and before
// cwd's (which stay the most specific, last); the repository named is
// cwd's. A link in a root's AGENTS.md that leads out of its repository is
// not followed.
func TestInstructionsOfOtherRoots(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	cwd := filepath.Join(root, "app")
	write(t, filepath.Join(root, instructions.AgentsFile), "root rules\n")
	write(t, filepath.Join(cwd, instructions.AgentsFile), "app rules\n")
	// Another folder of the same repository, and a folder outside any.
	lib := filepath.Join(root, "lib")
	write(t, filepath.Join(lib, instructions.ClaudeFile), "lib rules\n")
	other := t.TempDir()
	write(t, filepath.Join(other, instructions.AgentsFile), "other rules\n")
	user := filepath.Join(t.TempDir(), "AGENTS.md")
	write(t, user, "user rules\n")

	var in instructions.Reader
	set, read := in.LoadRoots(cwd, []string{lib, other}, user)
	want := []string{user, filepath.Join(root, instructions.AgentsFile), filepath.Join(lib, instructions.ClaudeFile),
		filepath.Join(other, instructions.AgentsFile), filepath.Join(cwd, instructions.AgentsFile)}
	if d := cmp.Diff(want, paths(set.Files)); d != "" {
		t.Fatalf("files (-want +got):\n%s", d)
	}
	if set.Root != root || set.Branch != "feature/x" {
		t.Errorf("root %q branch %q; want cwd's, %q feature/x", set.Root, set.Branch, root)
	}
	if read == nil || !cmp.Equal(read.Paths, want) {
		t.Errorf("the editor is shown %+v; want every file", read)
	}
	// No roots: Load's files, exactly.
	var one instructions.Reader
	plain, _ := one.Load(cwd, user)
	again, _ := (&instructions.Reader{}).LoadRoots(cwd, nil, user)
	if d := cmp.Diff(plain, again); d != "" {
		t.Errorf("LoadRoots without roots differs from Load (-Load +LoadRoots):\n%s", d)
	}
}

// ReadRoots reads what LoadRoots does, and shows the editor nothing.
func TestReadRootsIsLoadRoots(t *testing.T) {
	t.Parallel()
	cwd, lib := t.TempDir(), t.TempDir()
	write(t, filepath.Join(cwd, instructions.AgentsFile), "cwd rules\n")
	write(t, filepath.Join(lib, instructions.AgentsFile), "lib rules\n")
	var in instructions.Reader
	got := in.ReadRoots(cwd, []string{lib}, "")
	want := []string{filepath.Join(lib, instructions.AgentsFile), filepath.Join(cwd, instructions.AgentsFile)}
	if d := cmp.Diff(want, paths(got.Files)); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if _, read := in.LoadRoots(cwd, []string{lib}, ""); read == nil {
		t.Error("ReadRoots counted as shown: the first LoadRoots shows nothing")
	}
}
