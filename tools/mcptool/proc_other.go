//go:build !linux

package mcptool

import (
	"errors"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether process group pgid still has a member. Without
// /proc a zombie member counts as alive.
func groupAlive(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}
