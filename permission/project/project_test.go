package project_test

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
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

// TestRulesFileNeverTrusted: the rules file lives in the state directory,
// which a command may reach. A FIFO there must not block a permission check
// (read afresh at each), a link to /dev/zero must not be read to the end
// of memory, and a link planted as the lock must not be followed (it would
// create the file it names). Each is an error, answered at once.
func TestRulesFileNeverTrusted(t *testing.T) {
	t.Parallel()
	victim := filepath.Join(t.TempDir(), "victim")
	for name, plant := range map[string]func(path string) error{
		"FIFO":           func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"/dev/zero link": func(p string) error { return os.Symlink("/dev/zero", p) },
		"huge file": func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(8 << 30)
		},
	} {
		state := t.TempDir()
		if err := plant(filepath.Join(state, project.FileName)); err != nil {
			t.Fatal(err)
		}
		r := project.Open(state)
		if keys, err := r.Keys(t.TempDir()); err == nil {
			t.Errorf("%s: Keys = %v; want an error", name, keys)
		}
		if _, err := r.List(); err == nil {
			t.Errorf("%s: List succeeded", name)
		}
	}
	state := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(state, project.FileName+".lock")); err != nil {
		t.Fatal(err)
	}
	if err := project.Open(state).Allow(t.TempDir(), "ls"); err == nil {
		t.Error("Allow took a linked lock")
	}
	if _, err := os.Lstat(victim); !os.IsNotExist(err) {
		t.Errorf("the lock's link was followed: %v", err)
	}
}
