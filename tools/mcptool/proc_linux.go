package mcptool

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether process group pgid has a member that can still
// run. Zombies do not count: an orphan whose new parent never reaps it (a
// PID 1 that does not wait) would otherwise keep the group alive for ever.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell; assume the worst
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may contain anything, ')' included: fields
		// start after the last one. Then: state ppid pgrp.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if pg, _ := strconv.Atoi(string(f[2])); pg == pgid {
			return true
		}
	}
	return false
}
