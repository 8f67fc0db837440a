//go:build linux || darwin

package changes

import (
	"os"

	"golang.org/x/sys/unix"
)

// statAt reads a file's stat data relative to an open directory: no path
// is resolved from the root for each file, and nothing is allocated. The
// inode tells a file replaced by another of the same size and mtime (sed -i
// writes a new file and renames it over the old one); the ctime, which no
// user program can set, when the file last changed at all.
func statAt(dirfd int, name string) (entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return entry{}, err
	}
	return entry{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, mode: uint32(st.Mode),
		regular: st.Mode&unix.S_IFMT == unix.S_IFREG}, nil
}

// dirStamp is an open directory's own mtime and ctime (0, 0 when unknown).
func dirStamp(fd int) (mtime, ctime int64) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0, 0
	}
	return st.Mtim.Nano(), st.Ctim.Nano()
}

// statFile is an open file's stat data: those of the bytes read from it.
func statFile(f *os.File) (entry, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return entry{}, err
	}
	return entry{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, mode: uint32(st.Mode),
		regular: st.Mode&unix.S_IFMT == unix.S_IFREG}, nil
}
