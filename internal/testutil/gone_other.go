//go:build !linux

package testutil

import (
	"errors"
	"syscall"
)

// Gone reports that pid runs no more: kill(pid, 0) fails with ESRCH. Off
// Linux there is no /proc to tell a zombie from a live process; launchd
// reaps orphans, so only a child the test itself did not wait for stays a
// zombie.
func Gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// GroupGone reports that no process of group pgid exists: kill(-pgid, 0)
// fails with ESRCH.
func GroupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
