//go:build linux && !portable

package executor

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// wantPidfd asks the fork for a pidfd of the child (ours; os/exec keeps its
// own copy). It returns where the descriptor lands: -1 if the kernel gives
// none.
func wantPidfd(attr *syscall.SysProcAttr) *int {
	fd := -1
	attr.PidFD = &fd
	return &fd
}

// waitExit waits for the shell without holding an OS thread: the pidfd
// becomes readable when the child exits, and the runtime's poller waits on
// it like on a socket. Only then does cmd.Wait run, and it returns at once.
// A blocked wait4 would pin one thread per running command, and the
// runtime aborts the program past 10,000 threads.
func waitExit(cmd *exec.Cmd, pidfd *int) {
	if fd := *pidfd; fd >= 0 {
		*pidfd = -1
		pollExit(fd)
	}
	_ = cmd.Wait()
}

func pollExit(fd int) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		// Done when it exited, or when asking fails (then Wait decides).
		return err != unix.EINTR && (err != nil || n > 0)
	})
}
