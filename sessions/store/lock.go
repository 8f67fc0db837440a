package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// flock takes an exclusive advisory lock on f: at once, or ErrLocked when
// wait is false. flock (not fcntl) locks belong to the open file description,
// so they conflict between two opens of one process as well as between
// processes, are not dropped when another descriptor of the file is closed,
// and go away when the process dies however it dies. Linux and macOS alike.
func flock(f *os.File, wait bool) error {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrLocked
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// closeUnlocked drops f's lock, then closes f. Closing alone is not
// enough: a child forked by any goroutine of the process holds a copy of
// the descriptor, and with it the lock, until it execs (close-on-exec), so a
// session closed and at once reopened could be refused as locked.
// Unlocking acts on the open file description, whoever shares it.
func closeUnlocked(f *os.File) error {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.Close()
}

// sameFile reports whether f is still the file at its path: a lock taken on
// a file that was deleted (or replaced) while we waited for it guards nothing.
func sameFile(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Lstat(f.Name())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// syncDir makes the creation, removal or renaming of an entry of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
