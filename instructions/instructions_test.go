package instructions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/instructions"
)

// write creates path (and its directories) with text.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func paths(files []agent.InstructionFile) []string {
	var p []string
	for _, f := range files {
		p = append(p, f.Path)
	}
	return p
}

// repo makes outer/repo/.git (a repository inside a directory that has its
// own AGENTS.md, which must never be read) and returns outer and the root.
func repo(t *testing.T) (outer, root string) {
	outer = t.TempDir()
	root = filepath.Join(outer, "repo")
	write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/feature/x\n")
	write(t, filepath.Join(outer, instructions.AgentsFile), "ABOVE THE ROOT\n")
	return outer, root
}

func TestInstructionsChainOrder(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	user := filepath.Join(t.TempDir(), "AGENTS.md")
	write(t, user, "user rules\n")
	cwd := filepath.Join(root, "a", "b")
	write(t, filepath.Join(root, instructions.AgentsFile), "root rules\n")
	// a has only CLAUDE.md: it stands in.
	write(t, filepath.Join(root, "a", instructions.ClaudeFile), "a claude rules\n")
	// b has both: AGENTS.md wins, CLAUDE.md is not read.
	write(t, filepath.Join(cwd, instructions.AgentsFile), "b rules\n")
	write(t, filepath.Join(cwd, instructions.ClaudeFile), "b claude rules\n")

	var in instructions.Reader
	set, read := in.Load(cwd, user)
	want := []string{user, filepath.Join(root, instructions.AgentsFile), filepath.Join(root, "a", instructions.ClaudeFile), filepath.Join(cwd, instructions.AgentsFile)}
	if d := cmp.Diff(want, paths(set.Files)); d != "" {
		t.Fatalf("files (-want +got):\n%s", d)
	}
	if set.Root != root || set.Branch != "feature/x" {
		t.Errorf("root %q branch %q; want %q feature/x", set.Root, set.Branch, root)
	}
	if read == nil || !cmp.Equal(read.Paths, want) || len(read.Changed) != 0 {
		t.Errorf("first load shows %+v; want every file, none changed", read)
	}
	prompt := agent.SystemPrompt(agent.PromptEnv{Cwd: cwd, Project: set})
	last := -1
	for _, s := range []string{"user rules", "root rules", "a claude rules", "b rules"} {
		i := strings.Index(prompt, s)
		if i <= last {
			t.Fatalf("%q out of order (at %d, previous at %d) in:\n%s", s, i, last, prompt)
		}
		last = i
	}
	for _, s := range []string{"ABOVE THE ROOT", "b claude rules"} {
		if strings.Contains(prompt, s) {
			t.Errorf("prompt contains %q", s)
		}
	}
	if !strings.Contains(prompt, `<instructions path="`+filepath.Join(cwd, instructions.AgentsFile)+`">`+"\nb rules\n</instructions>") {
		t.Errorf("cwd file not under its path:\n%s", prompt)
	}
}

func TestInstructionsNoRepositoryReadsCwdOnly(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	cwd := filepath.Join(parent, "work")
	write(t, filepath.Join(parent, instructions.AgentsFile), "parent rules\n")
	write(t, filepath.Join(cwd, instructions.ClaudeFile), "cwd claude\n")
	var in instructions.Reader
	set, _ := in.Load(cwd, "")
	if d := cmp.Diff([]string{filepath.Join(cwd, instructions.ClaudeFile)}, paths(set.Files)); d != "" {
		t.Fatalf("files (-want +got):\n%s", d)
	}
	if set.Root != "" {
		t.Errorf("root %q outside any repository", set.Root)
	}
}

func TestInstructionsRepoRootStop(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	// The root itself as cwd, with a worktree-style .git file elsewhere.
	var in instructions.Reader
	set, read := in.Load(root, "")
	if len(set.Files) != 0 || read != nil {
		t.Fatalf("read %v (show %+v); nothing above the root may be read", paths(set.Files), read)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	gitdir := filepath.Join(t.TempDir(), "gitdir")
	write(t, filepath.Join(gitdir, "HEAD"), "0123456789abcdef0123456789abcdef01234567\n")
	write(t, filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
	set, _ = in.Load(filepath.Join(wt, "sub"), "")
	if set.Root != wt || set.Branch != "" || set.Detached != "0123456" {
		t.Errorf("worktree: root %q branch %q detached %q", set.Root, set.Branch, set.Detached)
	}
}

func TestInstructionsCutAt32KiB(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	user := filepath.Join(t.TempDir(), "AGENTS.md")
	cwd := filepath.Join(root, "sub")
	write(t, user, strings.Repeat("u", 10<<10))
	write(t, filepath.Join(root, instructions.AgentsFile), strings.Repeat("r", 20<<10))
	write(t, filepath.Join(cwd, instructions.AgentsFile), strings.Repeat("c", 12<<10))
	var in instructions.Reader
	set, read := in.Load(cwd, user)
	// 20 + 12 fit in 32 KiB; the user's file, the farthest, is cut.
	want := []string{filepath.Join(root, instructions.AgentsFile), filepath.Join(cwd, instructions.AgentsFile)}
	if d := cmp.Diff(want, paths(set.Files)); d != "" {
		t.Fatalf("kept (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{user}, set.Cut); d != "" || !cmp.Equal(read.Cut, set.Cut) {
		t.Fatalf("cut (-want +got):\n%s (shown %v)", d, read.Cut)
	}
	prompt := agent.SystemPrompt(agent.PromptEnv{Cwd: cwd, Project: set})
	if !strings.Contains(prompt, "[Left out to keep the instructions within 32 KiB: "+user+".") {
		t.Errorf("no note naming the cut file:\n%.400s", prompt[len(prompt)-400:])
	}

	// A nearest file alone over the bound keeps its beginning.
	write(t, filepath.Join(cwd, instructions.AgentsFile), "héllo"+strings.Repeat("é", 20<<10))
	set, _ = in.Load(cwd, user)
	if len(set.Files) != 1 || !set.Files[0].Truncated || len(set.Files[0].Text) > agent.MaxInstructions {
		t.Fatalf("oversized nearest file: %d files, truncated %v", len(set.Files), len(set.Files) == 1 && set.Files[0].Truncated)
	}
	if !strings.HasPrefix(set.Files[0].Text, "héllo") || !strings.HasSuffix(set.Files[0].Text, "é") {
		t.Errorf("cut inside a character or not at the end")
	}
	if d := cmp.Diff([]string{user, filepath.Join(root, instructions.AgentsFile)}, set.Cut); d != "" {
		t.Errorf("cut (-want +got):\n%s", d)
	}
}

func TestInstructionsChangeBetweenPrompts(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	file := filepath.Join(root, instructions.AgentsFile)
	write(t, file, "use make check\n")
	var in instructions.Reader
	set, read := in.Load(root, "")
	if set.Files[0].Text != "use make check\n" || read == nil {
		t.Fatalf("first load: %+v, shown %+v", set.Files, read)
	}
	if _, read = in.Load(root, ""); read != nil {
		t.Fatalf("unchanged files shown again: %+v", read)
	}
	// Same size, later mtime: read again.
	write(t, file, "use make test\n")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	set, read = in.Load(root, "")
	if set.Files[0].Text != "use make test\n" {
		t.Fatalf("changed file not read again: %q", set.Files[0].Text)
	}
	if read == nil || !cmp.Equal(read.Changed, []string{file}) {
		t.Fatalf("change shown as %+v; want %s changed", read, file)
	}
	// Removed: the model no longer gets it, and the editor is told.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	set, read = in.Load(root, "")
	if len(set.Files) != 0 || read == nil || len(read.Paths) != 0 {
		t.Fatalf("after removal: files %v, shown %+v", paths(set.Files), read)
	}
}

// BenchmarkInstructionsLoad is what each prompt pays for its project
// instructions when nothing changed: a cwd three directories below the
// repository root, with AGENTS.md at the root and in the cwd, and the
// user's file (stats, HEAD, no reads), plus building the system prompt.
func BenchmarkInstructionsLoad(b *testing.B) {
	root := b.TempDir()
	cwd := filepath.Join(root, "a", "b", "c")
	for path, text := range map[string]string{
		filepath.Join(root, ".git", "HEAD"):          "ref: refs/heads/main\n",
		filepath.Join(root, instructions.AgentsFile): strings.Repeat("root rule\n", 400),
		filepath.Join(cwd, instructions.AgentsFile):  strings.Repeat("cwd rule\n", 100),
		filepath.Join(root, "user", "AGENTS.md"):     "user rule\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var in instructions.Reader
	user := filepath.Join(root, "user", "AGENTS.md")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		set, _ := in.Load(cwd, user)
		_ = agent.SystemPrompt(agent.PromptEnv{Now: now, OS: "linux", Cwd: cwd, Project: set})
	}
}

// A project's instruction file that links out of the project (a cloned
// repository's AGENTS.md → ~/.aws/credentials) is not read: it would go
// into the system prompt, to the endpoint, with no question asked. A link
// within the project (CLAUDE.md → AGENTS.md) is read; so is the user's own
// file, wherever it links.
func TestInstructionsLinkOutOfTheProjectNotRead(t *testing.T) {
	t.Parallel()
	_, root := repo(t)
	secret := filepath.Join(t.TempDir(), "credentials")
	write(t, secret, "aws_secret_access_key = SECRET\n")
	if err := os.Symlink(secret, filepath.Join(root, instructions.AgentsFile)); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	write(t, filepath.Join(sub, "docs", "rules.md"), "sub rules\n")
	if err := os.Symlink(filepath.Join("docs", "rules.md"), filepath.Join(sub, instructions.ClaudeFile)); err != nil {
		t.Fatal(err)
	}
	userDir := t.TempDir()
	write(t, filepath.Join(userDir, "dotfiles", "AGENTS.md"), "user rules\n")
	user := filepath.Join(userDir, "AGENTS.md")
	if err := os.Symlink(filepath.Join(userDir, "dotfiles", "AGENTS.md"), user); err != nil {
		t.Fatal(err)
	}
	var in instructions.Reader
	set, _ := in.Load(sub, user)
	if d := cmp.Diff([]string{user, filepath.Join(sub, instructions.ClaudeFile)}, paths(set.Files)); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	for _, f := range set.Files {
		if strings.Contains(f.Text, "SECRET") {
			t.Errorf("%s read the linked file out of the project", f.Path)
		}
	}
}
