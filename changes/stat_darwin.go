package changes

import (
	"io/fs"
	"syscall"
)

// statIDs: see stat_linux.go.
func statIDs(fi fs.FileInfo) (ino uint64, ctime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, st.Ctimespec.Nano()
	}
	return 0, 0
}
