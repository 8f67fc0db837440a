package testutil

import (
	"errors"
	"syscall"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// Gone reports that pid runs no more: kill(pid, 0) fails with ESRCH, or
// only its zombie is left. A zombie runs nothing and holds no resources,
// and where PID 1 does not reap orphans (some containers) an orphan's
// zombie stays until the container ends.
func Gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	p, ok := proctab.Lookup(pid)
	return !ok || p.Zombie
}

// GroupGone reports that no process of group pgid runs: kill(-pgid, 0)
// fails with ESRCH, or every member left is a zombie.
func GroupGone(pgid int) bool {
	return !proctab.GroupAlive(pgid)
}
