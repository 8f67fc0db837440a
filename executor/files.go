package executor

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
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
	// Remove removes a file (not a directory); a link at path is removed,
	// not what it names. A file already gone is fs.ErrNotExist.
	Remove(path string) error
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
	// Roots are the session's other project roots, writable as Root is.
	Roots []string
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
// confined on this host. False when a Confiner runs commands elsewhere
// (it says so with a FilesAreHosts method of its own).
func (l *Local) FilesAreHosts() bool {
	if !l.opts.ConfineAll || l.opts.Confine == nil {
		return true
	}
	if _, ok := l.opts.Confine.(FileConfiner); !ok {
		return false
	}
	if h, ok := l.opts.Confine.(interface{ FilesAreHosts() bool }); ok {
		return h.FilesAreHosts()
	}
	return true
}

// HostFiles are file operations done directly, by the agent.
type HostFiles struct{}

// ReadFile is Files'. A FIFO or a device is refused, not waited on
// (opened without blocking, regular files only). It is what grep does to
// every file of a tree, so it costs four system calls, open, fstat, one
// read and close, where an *os.File costs seven (a poller registration
// that fails, a second fstat, the read that sees the end).
func (HostFiles) ReadFile(path string, max int64) ([]byte, error) {
	fd, err := openNoWait(path)
	if err != nil {
		return nil, notRegular(path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, notRegular(path, &fs.PathError{Op: "open", Path: path, Err: untrusted.ErrNotRegular})
	}
	data, err := readFD(fd, st.Size, max)
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, err
}

// openNoWait opens path for reading as untrusted.Open does: without
// blocking on a FIFO, and a FIFO for writing, a socket or a directory
// opened so is no regular file.
func openNoWait(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR):
			return -1, &fs.PathError{Op: "open", Path: path, Err: untrusted.ErrNotRegular}
		}
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readFD reads the regular file fd of size bytes (its stat's): at most max
// bytes, else its first max and ErrTooLarge. Once it has read size bytes
// it stops: a file that grows meanwhile is read as it was at the stat,
// unless it grew past max.
func readFD(fd int, size, max int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, max)+1)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				break
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) == size && size <= max {
			break
		}
	}
	if int64(len(buf)) > max {
		return buf[:max], ErrTooLarge
	}
	return buf, nil
}

// readOpen reads the regular file f holds: at most max bytes, else its
// first max bytes and ErrTooLarge.
func readOpen(f *os.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
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

// ErrIsDirectory: a read or a write of a directory.
var ErrIsDirectory = errors.New("is a directory")

// ErrIsDir reports whether err says a path is a directory.
func ErrIsDir(err error) bool { return errors.Is(err, ErrIsDirectory) }

// WriteFile is Files'. The file is written in place (a link at the path
// is followed, a hard link stays one, the mode stays).
func (HostFiles) WriteFile(path string, data []byte) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: ErrIsDirectory}
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

// Remove is Files'.
func (HostFiles) Remove(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return &fs.PathError{Op: "remove", Path: path, Err: ErrIsDirectory}
	}
	return os.Remove(path)
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

// ReadDirInfo is ReadDir whose entries carry their Info (an lstat) done
// from the open directory (fstatat), not by a path the kernel walks
// again from the root: glob wants every file's time, and this is most of
// its cost. An entry whose stat failed (it vanished) stats on demand.
func (HostFiles) ReadDirInfo(path string) ([]fs.DirEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return ents, nil
	}
	_ = sc.Control(func(fd uintptr) {
		for i, e := range ents {
			var st unix.Stat_t
			if err := unix.Fstatat(int(fd), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				ents[i] = statEntry{DirEntry: e, info: statInfo{name: e.Name(), st: st}}
			}
		}
	})
	return ents, nil
}

// statEntry is a directory entry with its lstat.
type statEntry struct {
	fs.DirEntry
	info statInfo
}

func (e statEntry) Info() (fs.FileInfo, error) { return e.info, nil }

// statInfo is an lstat's answer as an fs.FileInfo.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (i statInfo) Name() string       { return i.name }
func (i statInfo) Size() int64        { return i.st.Size }
func (i statInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i statInfo) Sys() any           { return &i.st }
func (i statInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }

// Mode is the stat's type and permission bits as fs's.
func (i statInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch uint32(i.st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if i.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// CheckedFiles are file operations whose every path is first resolved (its
// links, as far as it exists: ResolvePath) and checked by Allow, then done
// on the resolved path walked from "/" one name at a time, each opened
// relative to the directory already open and never through a link
// (untrusted.OpenIn with NoLinks, mkdirat/openat with O_NOFOLLOW): a
// command renaming a link over the path between the check and the
// operation makes the operation fail, never reach what the link names.
// That is what makes it a Confiner's policy over the files it confines.
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
	f, err := untrusted.OpenIn("/", rootRel(real), untrusted.NoLinks)
	if err != nil {
		return nil, notRegular(path, err)
	}
	defer f.Close()
	return readOpen(f, max)
}

// WriteFile is Files'. The path was resolved before the check, so the file
// is the one at the resolved path: written in place, never through a link.
func (c CheckedFiles) WriteFile(path string, data []byte) error {
	real, err := c.check(path, true)
	if err != nil {
		return err
	}
	dir, err := mkdirIn(filepath.Dir(real))
	if err != nil {
		return err
	}
	defer dir.Close()
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(real), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if errors.Is(err, unix.EISDIR) {
			err = ErrIsDirectory
		}
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), real)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return &fs.PathError{Op: "write", Path: path, Err: untrusted.ErrNotRegular}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Remove is Files'. The name is checked where it is (its directory's links
// resolved, not its own: a link is removed, not what it names), and
// unlinked in its directory opened from "/" with no link on the way, as a
// write's is: a link renamed over a directory above cannot take the
// removal elsewhere.
func (c CheckedFiles) Remove(path string) error {
	path = filepath.Clean(path)
	real := filepath.Join(ResolvePath(filepath.Dir(path)), filepath.Base(path))
	if err := c.Allow(real, true); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	dir, err := untrusted.OpenDirIn("/", rootRel(filepath.Dir(real)), untrusted.NoLinks)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: errors.Unwrap(err)}
	}
	defer dir.Close()
	if err := unix.Unlinkat(int(dir.Fd()), filepath.Base(real), 0); err != nil {
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) && isDirAt(dir, filepath.Base(real)) {
			err = ErrIsDirectory
		}
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// isDirAt reports whether name in dir is a directory: unlinking one is
// EISDIR on Linux but EPERM on macOS, which is also a plain refusal.
func isDirAt(dir *os.File, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// Stat is Files'.
func (c CheckedFiles) Stat(path string) (fs.FileInfo, error) {
	real, err := c.check(path, false)
	if err != nil {
		return nil, err
	}
	if real == "/" {
		return os.Stat(real)
	}
	dir, err := untrusted.OpenDirIn("/", rootRel(filepath.Dir(real)), untrusted.NoLinks)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: errors.Unwrap(err)}
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), filepath.Base(real), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: untrusted.ErrLink}
	}
	// The entry is no link, so a stat by name from the directory held is
	// of the same thing as the fstatat above.
	f, err := untrusted.OpenDirIn("/", rootRel(real), untrusted.NoLinks)
	if err == nil {
		defer f.Close()
		return f.Stat()
	}
	g, err := untrusted.OpenIn("/", rootRel(real), untrusted.NoLinks)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: errors.Unwrap(err)}
	}
	defer g.Close()
	return g.Stat()
}

// ReadDir is Files'.
func (c CheckedFiles) ReadDir(path string) ([]fs.DirEntry, error) {
	real, err := c.check(path, false)
	if err != nil {
		return nil, err
	}
	f, err := untrusted.OpenDirIn("/", rootRel(real), untrusted.NoLinks)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// rootRel is an absolute path relative to "/".
func rootRel(path string) string {
	return strings.TrimPrefix(filepath.Clean(path), "/")
}

// notRegular turns OpenIn's refusal of a directory into the error a read of
// a directory gets.
func notRegular(path string, err error) error {
	if errors.Is(err, untrusted.ErrNotRegular) {
		if fi, serr := os.Lstat(path); serr == nil && fi.IsDir() {
			return &fs.PathError{Op: "read", Path: path, Err: ErrIsDirectory}
		}
	}
	return err
}

// mkdirIn opens the directory dir (absolute, resolved), making what is
// missing of it one name at a time, each made and opened relative to the
// one already open and never through a link.
func mkdirIn(dir string) (*os.File, error) {
	f, err := untrusted.OpenDirIn("/", "", untrusted.NoLinks)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(rootRel(dir), "/") {
		if name == "" {
			continue
		}
		fd, err := unix.Openat(int(f.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(int(f.Fd()), name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat(int(f.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err != nil {
			f.Close()
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = untrusted.ErrLink
			}
			return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(f.Name(), name), Err: err}
		}
		f.Close()
		f = os.NewFile(uintptr(fd), filepath.Join(f.Name(), name))
	}
	return f, nil
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
