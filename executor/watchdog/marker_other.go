//go:build !linux

package watchdog

import (
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

type markedProc struct{ pid int }

func (markedProc) signal(unix.Signal) {}
func (markedProc) close()             {}

// markedProcs: another process's environment is not read here (macOS would
// need the KERN_PROCARGS2 sysctl), so only registered sessions are ended.
func markedProcs([]proctab.Proc, string, int, map[int]bool) []markedProc { return nil }
