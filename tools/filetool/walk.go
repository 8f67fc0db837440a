package filetool

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sync/errgroup"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/repo"
)

// maxWalk is the most files one search looks at; past it the search stops
// and says so (a search of / or of a home directory).
const maxWalk = 200_000

// maxIgnoreFile bounds a .gitignore read.
const maxIgnoreFile = 1 << 20

// errWalkLimit stops a walk past maxWalk files.
var errWalkLimit = errors.New("too many files")

// walk calls fn, from a few goroutines at once, for every file below root (a directory,
// absolute) — regular files, and links to them — with its path relative
// to root (slash-separated). It skips .git and what git ignores there (the
// user's excludes, which user gives, .git/info/exclude and the
// repository's .gitignore files, as the change tracker reads them; git's
// order, the nearer rule winning), and never follows a link to a directory. Every
// listing and read goes through x. A directory it cannot list is skipped.
func walk(ctx context.Context, x executor.Files, root string, user func() []gitignore.Pattern, fn func(abs, rel string, d fs.DirEntry) error) (truncated bool, err error) {
	return walkDirs(ctx, x, x.ReadDir, root, user, fn)
}

// infoReader is Files that read a directory's entries with their Info
// cheaper than one stat by path each (executor.HostFiles).
type infoReader interface {
	ReadDirInfo(path string) ([]fs.DirEntry, error)
}

// walkInfo is walk for a caller that wants each file's Info: where x can,
// every directory's entries come with theirs.
func walkInfo(ctx context.Context, x executor.Files, root string, user func() []gitignore.Pattern, fn func(abs, rel string, d fs.DirEntry) error) (truncated bool, err error) {
	if ir, ok := x.(infoReader); ok {
		return walkDirs(ctx, x, ir.ReadDirInfo, root, user, fn)
	}
	return walk(ctx, x, root, user, fn)
}

func walkDirs(ctx context.Context, x executor.Files, readDir func(string) ([]fs.DirEntry, error), root string, user func() []gitignore.Pattern, fn func(abs, rel string, d fs.DirEntry) error) (truncated bool, err error) {
	// The first error (the limit, a cancel, fn's) stops the others.
	group, gctx := errgroup.WithContext(ctx)
	group.SetLimit(walkers)
	w := &walker{ctx: gctx, x: x, readDir: readDir, fn: fn, group: group, user: user}
	domain, ignore := w.repoPatterns(root)
	err = w.dir(root, "", domain, ignore)
	if werr := w.group.Wait(); err == nil {
		err = werr
	}
	if errors.Is(err, errWalkLimit) {
		return true, nil
	}
	return false, err
}

// walkers is how many directories one walk reads at once: listing and
// matching them is most of a glob's time.
const walkers = 4

type walker struct {
	ctx     context.Context
	x       executor.Files
	readDir func(string) ([]fs.DirEntry, error)
	user    func() []gitignore.Pattern
	fn      func(abs, rel string, d fs.DirEntry) error
	inRepo  bool
	count   atomic.Int64
	// group reads subdirectories on other goroutines while it has room;
	// past that a directory is read on the goroutine that found it.
	group *errgroup.Group
}

// repoPatterns finds the repository holding root and reads the ignore
// rules above root: the user's, .git/info/exclude and each .gitignore from the top of
// the repository down to root's parent. It returns root's path in the
// repository and those rules; none outside a repository.
func (w *walker) repoPatterns(root string) ([]string, []gitignore.Pattern) {
	top := root
	for {
		if _, err := w.x.Stat(filepath.Join(top, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			return nil, nil
		}
		top = parent
	}
	w.inRepo = true
	// Git's order: a later rule wins, so the user's come first.
	var ignore []gitignore.Pattern
	if w.user != nil {
		ignore = w.user()
	}
	ignore = append(ignore, w.patterns(filepath.Join(top, ".git", "info", "exclude"), nil)...)
	rel, err := filepath.Rel(top, root)
	if err != nil || rel == "." {
		return nil, ignore
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := range parts {
		dir := filepath.Join(top, filepath.Join(parts[:i]...))
		ignore = append(ignore, w.patterns(filepath.Join(dir, ".gitignore"), parts[:i:i])...)
	}
	return parts, ignore
}

// patterns reads one ignore file; a missing or unreadable one has none.
func (w *walker) patterns(file string, domain []string) []gitignore.Pattern {
	data, err := w.x.ReadFile(file, maxIgnoreFile)
	if err != nil {
		return nil
	}
	return repo.ParsePatterns(data, domain)
}

// dir walks abs, whose path below the root is rel ("" for the root) and in
// the repository domain, under the rules ignore of the directories above.
func (w *walker) dir(abs, rel string, domain []string, ignore []gitignore.Pattern) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ents, err := w.readDir(abs)
	if err != nil {
		if rel == "" {
			return err
		}
		return nil
	}
	ignore, m := w.ignoreRules(abs, ents, domain, ignore)
	scratch := append(domain[:len(domain):len(domain)], "")
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			continue
		}
		isDir := e.IsDir()
		if !w.walkable(abs, e) {
			continue
		}
		scratch[len(scratch)-1] = name
		if m != nil && m.Match(scratch, isDir) {
			continue
		}
		childAbs := abs + "/" + name
		if abs == "/" {
			childAbs = "/" + name
		}
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if isDir {
			childDomain := append(domain[:len(domain):len(domain)], name)
			if w.group.TryGo(func() error { return w.dir(childAbs, childRel, childDomain, ignore) }) {
				continue
			}
			if err := w.dir(childAbs, childRel, childDomain, ignore); err != nil {
				return err
			}
			continue
		}
		if w.count.Add(1) > maxWalk {
			return errWalkLimit
		}
		if err := w.fn(childAbs, childRel, e); err != nil {
			return err
		}
	}
	return nil
}

// ignoreRules adds the rules of abs's own .gitignore, if any, to those of
// the directories above (copying, as siblings share ignore), and gives the
// matcher for them: nil when there are none, to skip matching outright.
func (w *walker) ignoreRules(abs string, ents []fs.DirEntry, domain []string, ignore []gitignore.Pattern) ([]gitignore.Pattern, gitignore.Matcher) {
	if w.inRepo {
		for _, e := range ents {
			if e.Name() == ".gitignore" && !e.IsDir() {
				ignore = append(ignore[:len(ignore):len(ignore)], w.patterns(filepath.Join(abs, ".gitignore"), domain)...)
				break
			}
		}
	}
	if len(ignore) == 0 {
		return ignore, nil
	}
	return ignore, gitignore.NewMatcher(ignore)
}

// walkable says whether the entry e of abs is a directory or a regular
// file: only those are walked or reported. A link counts only when it
// leads to a regular file; following links to directories could loop.
func (w *walker) walkable(abs string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err := w.x.Stat(filepath.Join(abs, e.Name()))
		return err == nil && fi.Mode().IsRegular()
	}
	return e.IsDir() || e.Type().IsRegular()
}
