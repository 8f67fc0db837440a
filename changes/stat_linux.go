package changes

import (
	"io/fs"
	"syscall"
)

// statIDs are the stat fields beyond size and mtime: the inode tells a file
// replaced by another of the same size and mtime (sed -i writes a new file
// and renames it over the old one), and the ctime, which no user program
// can set, when the file last changed at all.
func statIDs(fi fs.FileInfo) (ino uint64, ctime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, st.Ctim.Nano()
	}
	return 0, 0
}
