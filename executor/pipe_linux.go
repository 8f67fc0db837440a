//go:build linux && !portable

package executor

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe lets a heavy producer write ahead while we read, so it blocks
// less and we do fewer, fuller reads. Failure only costs throughput.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, bigPipe) })
}
