package executor

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrTooLarge: a file is larger than the read asked for at most.
var ErrTooLarge = errors.New("file too large")

// Files are one session's file operations (the file tools'), done where and
// as its commands would be: an unconfined command's directly, a confined
// one's under the sandbox's policy for that command. Paths are absolute.
type Files interface {
	// ReadFile reads a whole file of at most max bytes; a larger one is
	// ErrTooLarge (its first max bytes are returned with it).
	ReadFile(path string, max int64) ([]byte, error)
	// WriteFile replaces or creates a file, making its parent directories;
	// a file that existed keeps its mode.
	WriteFile(path string, data []byte) error
	// Stat follows links.
	Stat(path string) (fs.FileInfo, error)
	// ReadDir lists a directory, in no particular order.
	ReadDir(path string) ([]fs.DirEntry, error)
}

// FileAccess says whose file operations they are.
type FileAccess struct {
	// Owner is the calling session.
	Owner string
	// Root is the session's directory: what a confined command may write.
	Root string
	// Sandboxed: the operations are confined as a confined command would
	// be (the executor confines everything with ConfineAll anyway).
	Sandboxed bool
	// Shell, SpillDir and PrivateDir are the executor's, as a
	// Confinement has them; Files fills them.
	Shell, SpillDir, PrivateDir string
}

// FileConfiner is a Confiner that confines file operations too, by the
// policy it gives that owner's commands. A Confiner without it confines no
// file operation: the file tools then fail rather than run unconfined.
type FileConfiner interface {
	Files(a FileAccess) (Files, error)
}

// ErrNoFiles: the file operations cannot be done where the commands run.
var ErrNoFiles = errors.New("file operations are not available with this executor")

// Files returns the file operations for a, or why there are none: a
// confinement asked for and unavailable is never skipped.
func (l *Local) Files(a FileAccess) (Files, error) {
	if !a.Sandboxed && !l.opts.ConfineAll {
		return HostFiles{}, nil
	}
	if l.opts.Confine == nil {
		return nil, ErrNoSandbox
	}
	fc, ok := l.opts.Confine.(FileConfiner)
	if !ok {
		return nil, ErrNoFiles
	}
	if a.Root == "" {
		return nil, errors.New("files: no session directory")
	}
	shell, err := l.shellPath()
	if err != nil {
		return nil, err
	}
	root, own, err := l.spillDirs(a.Owner)
	if err != nil {
		return nil, err
	}
	a.Shell, a.SpillDir, a.PrivateDir = shell, own, root
	return fc.Files(a)
}

// FilesAreHosts reports whether the file operations see the agent's own
// files (so an editor on this machine sees the same ones): unconfined, or
// confined on this host. False when a Confiner runs commands elsewhere.
func (l *Local) FilesAreHosts() bool {
	if !l.opts.ConfineAll || l.opts.Confine == nil {
		return true
	}
	_, ok := l.opts.Confine.(FileConfiner)
	return ok
}

// HostFiles are file operations done directly, by the agent.
type HostFiles struct{}

// ReadFile is Files'.
func (HostFiles) ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errIsDir}
	}
	// Sized from the stat (a file that grows meanwhile is read up to
	// max+1 all the same): one allocation for most files.
	hint := min(fi.Size(), max) + 1
	buf := make([]byte, 0, hint)
	r := io.LimitReader(f, max+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) > max {
		return buf[:max], ErrTooLarge
	}
	return buf, nil
}

var errIsDir = errors.New("is a directory")

// ErrIsDir reports whether err says a path is a directory.
func ErrIsDir(err error) bool { return errors.Is(err, errIsDir) }

// WriteFile is Files'. The file is written in place (a link at the path
// is followed, a hard link stays one, the mode stays).
func (HostFiles) WriteFile(path string, data []byte) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: errIsDir}
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Stat is Files'.
func (HostFiles) Stat(path string) (fs.FileInfo, error) { return os.Stat(path) }

// ReadDir is Files'.
func (HostFiles) ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// CheckedFiles are HostFiles whose every path is first resolved (its links,
// as far as it exists: ResolvePath) and checked by Allow, then used
// resolved: a Confiner's policy over the files it confines. A path resolved
// and checked can still be swapped for a link by a command racing the
// operation; the Confiner's own confinement of commands is what holds
// those.
type CheckedFiles struct {
	// Allow returns nil when real (resolved) may be read, or written with
	// write set; its error is the operation's.
	Allow func(real string, write bool) error
}

func (c CheckedFiles) check(path string, write bool) (string, error) {
	real := ResolvePath(path)
	if err := c.Allow(real, write); err != nil {
		op := "read"
		if write {
			op = "write"
		}
		return "", &fs.PathError{Op: op, Path: path, Err: err}
	}
	return real, nil
}

// ReadFile is Files'.
func (c CheckedFiles) ReadFile(path string, max int64) ([]byte, error) {
	real, err := c.check(path, false)
	if err != nil {
		return nil, err
	}
	return HostFiles{}.ReadFile(real, max)
}

// WriteFile is Files'.
func (c CheckedFiles) WriteFile(path string, data []byte) error {
	real, err := c.check(path, true)
	if err != nil {
		return err
	}
	return HostFiles{}.WriteFile(real, data)
}

// Stat is Files'.
func (c CheckedFiles) Stat(path string) (fs.FileInfo, error) {
	real, err := c.check(path, false)
	if err != nil {
		return nil, err
	}
	return os.Stat(real)
}

// ReadDir is Files'.
func (c CheckedFiles) ReadDir(path string) ([]fs.DirEntry, error) {
	real, err := c.check(path, false)
	if err != nil {
		return nil, err
	}
	return HostFiles{}.ReadDir(real)
}

// ResolvePath is path (absolute) with its links resolved as far as it
// exists: a file to be made is where its existing parent really is.
func ResolvePath(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(path, rest)
		}
		rest = filepath.Join(filepath.Base(path), rest)
		path = parent
	}
}
