package watchdog

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// markedProc is a process whose environment carries the marker, held by a
// pidfd so that a signal can never reach another process that reused its
// pid.
type markedProc struct {
	pid, fd int
}

func (m markedProc) signal(sig unix.Signal) { _ = unix.PidfdSendSignal(m.fd, sig, nil, 0) }
func (m markedProc) close()                 { _ = unix.Close(m.fd) }

// markedProcs finds the live processes whose /proc/pid/environ holds
// marker, skipping self and members of groups (signalled as groups). The
// pidfd is opened before the environment is read, so what is signalled is
// what was read. A process that cleared its environment, or whose
// environ is unreadable (setuid), is not found.
func markedProcs(ps []proctab.Proc, marker string, self int, groups map[int]bool) []markedProc {
	if marker == "" {
		return nil
	}
	want := append([]byte(marker), 0)
	var out []markedProc
	for _, p := range ps {
		if p.Zombie || p.Pid == self || groups[p.Pgid] {
			continue
		}
		fd, err := unix.PidfdOpen(p.Pid, 0)
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
		if err != nil || !(bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			_ = unix.Close(fd)
			continue
		}
		out = append(out, markedProc{pid: p.Pid, fd: fd})
	}
	return out
}
