package testutil

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Gone reports that pid runs no more: kill(pid, 0) fails with ESRCH, or
// only its zombie is left. A zombie runs nothing and holds no resources,
// and where PID 1 does not reap orphans (some containers) an orphan's
// zombie stays until the container ends.
func Gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	state, _, ok := stat(pid)
	return !ok || state == 'Z' || state == 'X'
}

// GroupGone reports that no process of group pgid runs: kill(-pgid, 0)
// fails with ESRCH, or every member left is a zombie.
func GroupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pg, ok := stat(pid); ok && pg == pgid && state != 'Z' && state != 'X' {
			return false
		}
	}
	return true
}

// stat reads the state letter and process group of pid from
// /proc/<pid>/stat; ok is false when pid does not exist.
func stat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold anything: the fields
	// after the last ')' are state, ppid, pgrp, …
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, true
}
