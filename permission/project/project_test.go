package project_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/permission/project"
)

func TestRoot(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "a", "b")
	// A worktree's .git is a file.
	wt := filepath.Join(t.TempDir(), "wt")
	plain := t.TempDir()
	for _, d := range []string{sub, wt} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: /elsewhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{repo: repo, sub: repo, sub + "/": repo, wt: wt, plain: plain} {
		if got := project.Root(dir); got != want {
			t.Errorf("Root(%s) = %s, want %s", dir, got, want)
		}
	}
}

// TestRules: keys are per project, shared by every directory in it, listed
// in a stable order and removable; concurrent writers keep every key.
func TestRules(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "cmd")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	r := project.Open(state)
	if keys, err := r.Keys(repo); err != nil || len(keys) != 0 {
		t.Fatalf("no file yet: %v %v", keys, err)
	}
	if err := r.Allow(sub, "go test", "git status"); err != nil {
		t.Fatal(err)
	}
	keys, err := r.Keys(repo)
	if err != nil || !keys["go test"] || !keys["git status"] || len(keys) != 2 {
		t.Fatalf("Keys(repo) = %v, %v", keys, err)
	}
	if keys, _ := r.Keys(other); len(keys) != 0 {
		t.Errorf("another project got %v", keys)
	}
	// Two processes' worth of writers at once: every key is kept.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := project.Open(state).Allow(other, string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if keys, _ := r.Keys(other); len(keys) != 8 {
		t.Errorf("concurrent Allow kept %d keys of 8: %v", len(keys), keys)
	}
	list, err := r.List()
	if err != nil || len(list) != 10 {
		t.Fatalf("List = %v, %v", list, err)
	}
	first := list[0]
	if err := r.Remove(first); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(first); err == nil {
		t.Error("removing a rule twice did not fail")
	}
	if list, _ := r.List(); len(list) != 9 {
		t.Errorf("after Remove: %v", list)
	}
	if _, err := os.Stat(filepath.Join(repo, project.FileName)); !os.IsNotExist(err) {
		t.Errorf("a rules file was written in the repository: %v", err)
	}
}

// TestRulesBroken: a file that does not parse grants nothing and says so.
func TestRulesBroken(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, project.FileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := project.Open(state)
	if keys, err := r.Keys(t.TempDir()); err == nil || len(keys) != 0 {
		t.Errorf("Keys = %v, %v; want an error", keys, err)
	}
	if err := r.Allow(t.TempDir(), "ls"); err == nil {
		t.Error("Allow over a broken file succeeded (it would have dropped the rules in it)")
	}
}
