// Package project keeps the commands a user allowed "always in this
// project": one file in the user's state directory, keyed by the project's
// root (its git root, else the session's directory). It never lives in the
// repository: a repository must not grant itself rights.
package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/repo"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// FileName is the rules file inside the state directory.
const FileName = "project-rules.json"

// Rules is the rules file of one state directory. Every call reads the file
// afresh, so a rule added by another agent process applies at once; writes
// are under an exclusive lock and replace the file atomically.
type Rules struct {
	path string
}

// Rule is one remembered command key in one project.
type Rule struct {
	Project string `json:"project"`
	Key     string `json:"key"`
}

// file is the JSON form: project root → keys, sorted.
type file struct {
	Projects map[string][]string `json:"projects"`
}

// Open returns the rules of stateDir; nothing is read or created yet.
func Open(stateDir string) *Rules {
	return &Rules{path: filepath.Join(stateDir, FileName)}
}

// Path is the rules file's path.
func (r *Rules) Path() string { return r.path }

// Root is the project a directory belongs to: the nearest directory at or
// above it holding .git (a directory, or a file in a worktree), else the
// directory itself.
func Root(dir string) string {
	if top := repo.Top(dir); top != "" {
		return top
	}
	return filepath.Clean(dir)
}

// Keys returns the keys allowed in the project of cwd.
func (r *Rules) Keys(cwd string) (map[string]bool, error) {
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, k := range f.Projects[Root(cwd)] {
		keys[k] = true
	}
	return keys, nil
}

// Allow remembers keys for the project of cwd.
func (r *Rules) Allow(cwd string, keys ...string) error {
	root := Root(cwd)
	return r.update(func(f *file) {
		have := f.Projects[root]
		for _, k := range keys {
			if k != "" && !slices.Contains(have, k) {
				have = append(have, k)
			}
		}
		slices.Sort(have)
		f.Projects[root] = have
	})
}

// List returns every rule, by project then key: the numbering `dsh-acp
// rules` shows and `rules rm N` uses.
func (r *Rules) List() ([]Rule, error) {
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	return flatten(f), nil
}

func flatten(f file) []Rule {
	var out []Rule
	roots := make([]string, 0, len(f.Projects))
	for p := range f.Projects {
		roots = append(roots, p)
	}
	slices.Sort(roots)
	for _, p := range roots {
		for _, k := range f.Projects[p] {
			out = append(out, Rule{Project: p, Key: k})
		}
	}
	return out
}

// Remove deletes one rule; removing one that is not there is an error.
func (r *Rules) Remove(rule Rule) error {
	found := false
	err := r.update(func(f *file) {
		keys := f.Projects[rule.Project]
		i := slices.Index(keys, rule.Key)
		if i < 0 {
			return
		}
		found = true
		keys = slices.Delete(keys, i, i+1)
		if len(keys) == 0 {
			delete(f.Projects, rule.Project)
		} else {
			f.Projects[rule.Project] = keys
		}
	})
	if err == nil && !found {
		return fmt.Errorf("no rule %q in %s", rule.Key, rule.Project)
	}
	return err
}

// maxFileBytes bounds the rules file read: thousands of rules are a few
// hundred KB.
const maxFileBytes = 4 << 20

// openRegular opens path as untrusted, never following a link: the rules
// file (and its lock) is in the state directory, which a command may
// reach; a link there is never followed, a FIFO never blocks a permission
// check.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	return untrusted.Open(path, flag|syscall.O_NOFOLLOW, perm)
}

// readFile reads the rules file: a regular file of at most maxFileBytes.
func (r *Rules) readFile() ([]byte, error) {
	return untrusted.ReadWhole(r.path, syscall.O_NOFOLLOW, maxFileBytes)
}

func (r *Rules) read() (file, error) {
	f := file{Projects: map[string][]string{}}
	data, err := r.readFile()
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("project rules: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("project rules %s: %w", r.path, err)
	}
	if f.Projects == nil {
		f.Projects = map[string][]string{}
	}
	return f, nil
}

// update reads, changes and rewrites the file under an exclusive lock, so
// two agent processes adding rules at once both keep theirs.
func (r *Rules) update(change func(*file)) error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("project rules: %w", err)
	}
	lock, err := openRegular(r.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("project rules: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("project rules: lock: %w", err)
	}
	f, err := r.read()
	if err != nil {
		return err
	}
	change(&f)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("project rules: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), ".project-rules-*")
	if err != nil {
		return fmt.Errorf("project rules: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("project rules: write: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("project rules: %w", err)
	}
	return nil
}
