//go:build unix

package untrusted

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Links says what OpenIn does with a symbolic link on the way to a file.
type Links int

const (
	// NoLinks refuses a link anywhere below the directory (ErrLink).
	NoLinks Links = iota
	// LinksWithin follows a link whose target stays within the directory
	// (CLAUDE.md → AGENTS.md) and refuses one that leaves it (ErrOutside).
	LinksWithin
)

// ErrLink: a link on the way, where NoLinks refuses them.
var ErrLink = errors.New("a symbolic link on the way")

// ErrOutside: the name, or a link on the way, leads out of the directory.
var ErrOutside = errors.New("outside the directory")

// maxLinks bounds the links followed on one way, as the kernel's own
// bound does (40): a loop of links ends with an error.
const maxLinks = 40

// OpenIn opens the regular file at rel below dir, for reading, in a way a
// command renaming links and directories around it cannot turn into an
// open of something else: every component is opened relative to the
// directory already open with O_NOFOLLOW, a link is read where it stands
// (readlinkat) and its target walked the same way, and ".." goes back to
// the directory it came from, never above dir. There is no second lookup
// by name, so what the caller learns from the file (f.Stat, its bytes) is
// of the file it holds. rel is relative (slash or OS separators); dir
// itself is taken as it is named, links included: it is the caller's, not
// a command's.
//
// A FIFO, a device or a directory at the end is ErrNotRegular, as with Open.
func OpenIn(dir, rel string, links Links) (*os.File, error) {
	return openIn(dir, rel, links, false)
}

// OpenDirIn opens the directory at rel below dir as OpenIn opens a file:
// for a walk that must not be led out of dir by a link renamed over a
// directory between its listing and its reading.
func OpenDirIn(dir, rel string, links Links) (*os.File, error) {
	return openIn(dir, rel, links, true)
}

func openIn(dir, rel string, links Links, wantDir bool) (*os.File, error) {
	if filepath.IsAbs(rel) {
		return nil, &os.PathError{Op: "open", Path: rel, Err: ErrOutside}
	}
	fail := func(err error) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(dir, rel), Err: err}
	}
	root, err := openDir(unix.AT_FDCWD, dir)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	// stack holds the directories walked down from root (stack[0]); its
	// top is where the next component is opened. Every fd on it is closed
	// on the way out, root included.
	stack := []int{root}
	defer func() {
		for _, fd := range stack {
			unix.Close(fd)
		}
	}()
	todo := split(rel)
	followed := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				return fail(ErrOutside)
			}
			unix.Close(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		last := !hasName(todo)
		fd, err := openComponent(top, name, last, wantDir)
		if err == nil {
			switch {
			case !last:
				stack = append(stack, fd)
				continue
			case wantDir:
				return os.NewFile(uintptr(fd), filepath.Join(dir, rel)), nil
			}
			return regular(fd, filepath.Join(dir, rel))
		}
		if ferr := notLinkError(err); ferr != nil {
			return fail(ferr)
		}
		// A link (ELOOP: O_NOFOLLOW met one; ENOTDIR: O_DIRECTORY did),
		// or a file where a directory was wanted.
		target, lerr := readlinkat(top, name)
		if lerr != nil {
			return fail(notLinkAfterAll(err, wantDir))
		}
		if links == NoLinks {
			return fail(ErrLink)
		}
		if followed++; followed > maxLinks {
			return fail(unix.ELOOP)
		}
		if filepath.IsAbs(target) {
			in, ok := RelIn(dir, target)
			if !ok {
				return fail(ErrOutside)
			}
			stack = backToRoot(stack)
			target = in
		}
		todo = append(split(target), todo...)
	}
	if wantDir {
		// rel ends at a directory already open ("", ".", "a/.."): it is
		// the caller's now, not the deferred close's.
		fd := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return os.NewFile(uintptr(fd), filepath.Join(dir, rel)), nil
	}
	return fail(ErrNotRegular)
}

// openComponent opens name in the directory top, never through a link: as
// a directory when the walk goes on below it or a directory is wanted,
// else as the file asked for.
func openComponent(top int, name string, last, wantDir bool) (int, error) {
	if !last || wantDir {
		return openDir(top, name)
	}
	return unix.Openat(top, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
}

// notLinkError is nil when the open's error may mean a link stood there
// (ELOOP: O_NOFOLLOW met one; EMLINK: as some BSDs say it; ENOTDIR:
// O_DIRECTORY did, or a file), which only reading it can tell; otherwise it
// is the error to fail with.
func notLinkError(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) {
		return nil
	}
	if errors.Is(err, unix.ENXIO) {
		// A socket.
		return ErrNotRegular
	}
	return err
}

// notLinkAfterAll is the error for a component whose open failed as a
// link's would (openErr) but which readlink says is no link: a file where
// a directory was wanted keeps the open's error; anything else where a
// regular file was wanted is not one.
func notLinkAfterAll(openErr error, wantDir bool) error {
	if errors.Is(openErr, unix.ENOTDIR) || wantDir {
		return openErr
	}
	return ErrNotRegular
}

// backToRoot closes every directory on stack above the root, as an
// absolute link target is walked again from the root.
func backToRoot(stack []int) []int {
	for _, fd := range stack[1:] {
		unix.Close(fd)
	}
	return stack[:1]
}

// ReadIn reads at most limit bytes of the regular file at rel below dir
// (see OpenIn).
func ReadIn(dir, rel string, links Links, limit int64) ([]byte, error) {
	f, err := OpenIn(dir, rel, links)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// RelIn is path relative to dir when it names something below dir, as
// written or once dir's own links are resolved (/tmp/p/a for a dir
// /private/tmp/p): the rel OpenIn takes. It resolves no link of path's.
func RelIn(dir, path string) (string, bool) {
	if rel, ok := lexicalRel(dir, path); ok {
		return rel, true
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		return lexicalRel(real, path)
	}
	return "", false
}

func lexicalRel(dir, path string) (string, bool) {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func split(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// hasName reports whether names holds a component that goes down: only
// then is the current one a directory to enter ("a/." names a).
func hasName(names []string) bool {
	for _, n := range names {
		if n != "" && n != "." {
			return true
		}
	}
	return false
}

func openDir(at int, name string) (int, error) {
	for {
		fd, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func readlinkat(at int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(at, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size >= 1<<16 {
			return "", fmt.Errorf("readlink %s: target too long", name)
		}
	}
}

// regular makes fd a file if it is a regular one (fstat of the descriptor
// itself), and closes it if not.
func regular(fd int, name string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenAt opens the regular file name (one component) in the directory dir
// holds open, for reading, never through a link: for many files of one
// directory opened with OpenDirIn.
func OpenAt(dir *os.File, name string) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrOutside}
	}
	path := filepath.Join(dir.Name(), name)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) {
			err = ErrNotRegular
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return regular(fd, path)
}
