package docker

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Files are a session's file operations as its container sees the files
// (executor.FileConfiner). With an engine on this host the container sees
// the session's directory at its own path (a bind mount, writable) and the
// --docker-read paths (read-only): an operation there is done from this
// side on the very files the container sees, as the change tracker
// measures them; anything else is refused, since the container has other
// files there (its image's). With a remote engine the files are that
// host's, which this one cannot reach: executor.ErrNoFiles.
func (d *Confiner) Files(a executor.FileAccess) (executor.Files, error) {
	if d.remote {
		return nil, fmt.Errorf("%w: the engine %s is on another host", executor.ErrNoFiles, d.host)
	}
	root := executor.ResolvePath(a.Root)
	read := make([]string, 0, len(d.opts.Read))
	for _, p := range d.opts.Read {
		read = append(read, executor.ResolvePath(p))
	}
	return executor.CheckedFiles{Allow: func(real string, write bool) error {
		if beneath(real, root) {
			return nil
		}
		if !write {
			for _, p := range read {
				if beneath(real, p) {
					return nil
				}
			}
		}
		what := "see"
		if write {
			what = "write"
		}
		return fmt.Errorf("the session's container does not %s it (only the session's directory%s)", what, readNote(write, read))
	}}, nil
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
