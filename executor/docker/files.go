package docker

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Files are a session's file operations as its container sees the files
// (executor.FileConfiner): the session's directory and its other project
// roots at their own paths (bind mounts, writable) and the --docker-read
// paths (read-only); anything else
// is refused, since the container has other files there (its image's).
//
// With an engine on this host an operation is done from this side on the
// very files the container sees, as the change tracker measures them and
// as the editor sees them (so the editor's fs methods may carry them).
// With a remote engine (tcp://, ssh://) the files are that host's: the
// helper inside the session's container does each operation, under the
// same policy resolved in the container's own files, and the answer comes
// back over the tether.
func (d *Confiner) Files(a executor.FileAccess) (executor.Files, error) {
	if d.remote {
		if a.Root == "" {
			return nil, fmt.Errorf("docker: file operations: no session directory")
		}
		return &tetherFiles{d: d, a: a}, nil
	}
	return policy(a.Root, a.Roots, d.opts.Read), nil
}

// FilesAreHosts reports whether the file operations see this host's own
// files: an engine on this host mounts them; a remote one has its own.
func (d *Confiner) FilesAreHosts() bool { return !d.remote }

// policy is what a session's container may see, root, its other roots and
// read resolved in the files of whoever applies it (the agent for a local
// engine, the helper in the container for a remote one): reads inside a
// root or a read path, writes inside a root.
func policy(root string, others, read []string) executor.CheckedFiles {
	roots := []string{executor.ResolvePath(root)}
	for _, r := range others {
		roots = append(roots, executor.ResolvePath(r))
	}
	resolved := make([]string, 0, len(read))
	for _, p := range read {
		resolved = append(resolved, executor.ResolvePath(p))
	}
	return executor.CheckedFiles{Allow: func(real string, write bool) error {
		for _, root := range roots {
			if beneath(real, root) {
				return nil
			}
		}
		if !write {
			for _, p := range resolved {
				if beneath(real, p) {
					return nil
				}
			}
		}
		what := "see"
		if write {
			what = "write"
		}
		return fmt.Errorf("the session's container does not %s it (only the session's %s%s)", what, dirsNote(others), readNote(write, resolved))
	}}
}

// dirsNote names what the container has of the session's own.
func dirsNote(others []string) string {
	if len(others) == 0 {
		return "directory"
	}
	return "directories"
}

func readNote(write bool, read []string) string {
	if write || len(read) == 0 {
		return ""
	}
	return " and " + strings.Join(read, ", ")
}

// beneath reports whether path is dir or inside it.
func beneath(path, dir string) bool {
	dir = filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
