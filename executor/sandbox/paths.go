package sandbox

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/executor"
)

// readTrees are the trees p lets a command read (before Deny): the whole
// filesystem, or Read and what bash needs.
func (p Policy) readTrees() []string {
	if len(p.Read) == 0 {
		return []string{"/"}
	}
	return append(append(append([]string{}, p.Read...), SystemRead...), filepath.Dir(p.Shell))
}

// writeTrees are the trees p lets a command write (before Deny).
func (p Policy) writeTrees() []string {
	return append([]string{p.Workdir, p.TempDir}, p.Write...)
}

// Permits reports whether a command confined by p may read (write false) or
// write path, which is absolute. It asks the question Landlock answers for
// the rules built from p (see buildRules): path lies at or beneath a
// granted tree (the device files too, for a write) that is not itself
// denied, and no denied path lies between that tree and it (an explicit
// tree strictly inside a denied one re-opens it). Links in path are
// resolved first, as the kernel resolves them: a link inside the granted
// trees that leads out of them leads out. It is how the file tools' reads
// and writes of a confined session are checked: by the policy object the
// session's commands get, through the same deny and grant rules.
func (p Policy) Permits(path string, write bool) bool {
	path = executor.ResolvePath(path)
	deny := resolveAll(p.Deny)
	trees := p.writeTrees()
	if !write {
		trees = append(p.readTrees(), trees...)
	}
	roots := resolveAll(trees)
	if write {
		roots = append(roots, Devices...)
	}
	for _, root := range roots {
		if !(path == root || within(path, root)) {
			continue
		}
		if denied, _ := deniedAt(root, deny, true); denied {
			continue
		}
		blocked := false
		for _, d := range deny {
			if (path == d || within(path, d)) && !within(root, d) {
				blocked = true
				break
			}
		}
		if !blocked {
			return true
		}
	}
	return false
}

// deniedAt reports whether root is denied itself (it is a denied path, or
// lies inside one without being an explicit root), and whether a denied
// path lies beneath it.
func deniedAt(root string, deny []string, top bool) (denied, below bool) {
	for _, d := range deny {
		switch {
		case root == d:
			return true, below
		case within(root, d) && !top:
			return true, below
		case within(d, root):
			below = true
		}
	}
	return false, below
}

// resolveAll cleans paths and resolves their symlinks; paths that do not
// exist are kept as they are (a missing grant is skipped; a missing deny
// entry hides nothing, so deny a directory, not files that come later).
func resolveAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, p)
	}
	return out
}
