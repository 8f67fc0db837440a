package store

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// The store's directories can be reached by what the user's commands do
// (a session whose cwd holds the state directory, a sandbox that lets a
// command create files beside a denied path), so nothing in them is
// trusted: a link is never followed, a file that is not regular is never
// read or written, and nothing is read past a bound.

// errNotRegular: a name of the store's is a link, a FIFO, a device or a
// directory. Callers wrap it in ErrForeign: it is not ours.
var errNotRegular = untrusted.ErrNotRegular

// openRegular opens path as untrusted, never following a link.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	return untrusted.Open(path, flag|unix.O_NOFOLLOW, perm)
}

// readLimited reads the regular file at path (never through a link),
// failing if it holds more than limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	return untrusted.ReadWhole(path, unix.O_NOFOLLOW, limit)
}

// replaceFile replaces path with data, through a temporary file of a fresh
// name (O_EXCL: a name planted beside path, a link above all, is never
// opened) renamed over path; rename replaces a link at path rather than
// following it. With durable, the data and the rename survive a crash.
func replaceFile(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if durable {
		return syncDir(dir)
	}
	return nil
}

// removeTemps removes what replaceFile left for path when its writer was
// killed between create and rename (and the fixed name older versions
// used).
func removeTemps(path string) {
	os.Remove(path + ".tmp")
	tmps, _ := filepath.Glob(globEscape(path) + ".*.tmp")
	for _, t := range tmps {
		os.Remove(t)
	}
}

// globEscape quotes the glob metacharacters of a path.
func globEscape(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*', '?', '[', '\\':
			out = append(out, '\\', c)
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
