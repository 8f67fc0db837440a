package changes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// What a watch reports: every way a directory's entries or their content,
// names or metadata change, and the directory itself going away.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

const (
	evOverflow = unix.IN_Q_OVERFLOW
	evIgnored  = unix.IN_IGNORED
	evSelf     = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
)

// eventBuf holds a few hundred events per read (more take more reads;
// the kernel's queue, not this buffer, is what can overflow).
const eventBuf = 16 << 10

// remoteFS are the file systems whose files other kernels change: their
// writes raise no event here, so trees on them are walked.
var remoteFS = map[int64]bool{
	0x6969:     true, // NFS
	0x517b:     true, // SMB
	0xfe534d42: true, // SMB2
	0xff534d42: true, // CIFS
	0x65735546: true, // FUSE (sshfs and the like)
	0x01021997: true, // 9P (VM shares)
	0x00c36400: true, // Ceph
	0x5346414f: true, // AFS
	0x47504653: true, // GPFS
	0x0bd00bd0: true, // Lustre
}

// newWatcher opens an inotify instance for a tree at root, unless the
// root's file system is a remote one.
func newWatcher(root string) (int, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return -1, fmt.Errorf("statfs %s: %w", root, err)
	}
	if remoteFS[int64(st.Type)] {
		return -1, fmt.Errorf("%s is on a network file system (type %#x)", root, st.Type)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("inotify_init1: %w", err)
	}
	return fd, nil
}

func addWatch(fd int, abs string) (int, error) {
	wd, err := unix.InotifyAddWatch(fd, abs, watchMask)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return -1, os.ErrNotExist
	case errors.Is(err, unix.EACCES):
		return -1, os.ErrPermission
	case err != nil:
		// ENOSPC: the user's fs.inotify.max_user_watches is reached.
		return -1, err
	}
	return wd, nil
}

func rmWatch(fd, wd int) {
	_, _ = unix.InotifyRmWatch(fd, uint32(wd))
}

func closeWatcher(fd int) {
	_ = unix.Close(fd)
}

// read returns the events queued, without waiting for more.
func (wt *watcher) read() ([]event, error) {
	var out []event
	for {
		n, err := unix.Read(wt.fd, wt.buf)
		if errors.Is(err, unix.EAGAIN) {
			return out, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read inotify: %w", err)
		}
		out, err = parseEvents(wt.buf[:n], out)
		if err != nil {
			return nil, err
		}
	}
}

// parseEvents appends the events in buf (struct inotify_event, each
// followed by its NUL-padded name) to out.
func parseEvents(buf []byte, out []event) ([]event, error) {
	for len(buf) > 0 {
		if len(buf) < unix.SizeofInotifyEvent {
			return nil, errors.New("read inotify: short event")
		}
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[12:]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(buf) {
			return nil, errors.New("read inotify: short name")
		}
		name := buf[unix.SizeofInotifyEvent:end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		out = append(out, event{wd: int(wd), mask: mask, name: string(name)})
		buf = buf[end:]
	}
	return out, nil
}
