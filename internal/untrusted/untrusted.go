// Package untrusted opens and reads files the agent did not write and
// must not take for what their names say: a command (or a cloned
// repository) may have put a FIFO there, which would block open(2) until a
// writer comes and hang a prompt, a walk or the agent's start; a link to
// /dev/zero, which never ends; or a link out of the directory it is read
// for, renamed there between a check and a read (OpenIn: one open, from
// the directory, no second lookup by name). It imports nothing of
// dsh-acp's, so every package may use it.
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular: the name is a FIFO, a device, a socket, a directory or,
// opened with O_NOFOLLOW, a link.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path, without blocking, and returns it only if it is a
// regular file; with O_NOFOLLOW in flag a link is refused as well.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		// ELOOP: a link (O_NOFOLLOW); ENXIO: a FIFO opened for writing with
		// no reader, or a socket; EISDIR: a directory opened for writing.
		if errors.Is(err, syscall.ELOOP) && flag&syscall.O_NOFOLLOW != 0 || errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EISDIR) {
			return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	// O_NONBLOCK means nothing to a regular file's reads and writes: it
	// was only for the open.
	return f, nil
}

// Read reads at most limit bytes of the regular file at path (see Open;
// flag adds to O_RDONLY, e.g. O_NOFOLLOW).
func Read(path string, flag int, limit int64) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY|flag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// ReadWhole reads the regular file at path (see Read), failing if it holds
// more than max bytes: for a file that is no use cut.
func ReadWhole(path string, flag int, max int64) ([]byte, error) {
	data, err := Read(path, flag, max+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read %s: over %d bytes", path, max)
	}
	return data, nil
}
