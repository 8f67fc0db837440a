package proctab

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Marked is a live process whose environment carries a marker, held by a
// pidfd so that a signal can never reach another process that reused its
// pid. Close releases it.
type Marked struct {
	Pid int
	fd  int
}

// Signal sends sig to the process (nothing if it is gone), SIGCONT after a
// SIGTERM (see deliver).
func (m Marked) Signal(sig unix.Signal) {
	_ = deliver(func(s unix.Signal) error { return unix.PidfdSendSignal(m.fd, s, nil, 0) }, sig)
}

// Close releases the pidfd.
func (m Marked) Close() { _ = unix.Close(m.fd) }

// FindMarked returns the live processes of ps whose environment
// (/proc/pid/environ) holds one of markers ("NAME=VALUE"), skipping self and
// the members of skip's groups (the caller signals those as groups). A
// match is held by a pidfd opened before its environment is read again, so
// what is signalled is what was read. A process that cleared its
// environment, or whose environ is unreadable (setuid, another user's), is
// not found.
func FindMarked(ps []Proc, markers []string, skip map[int]bool) []Marked {
	if len(markers) == 0 {
		return nil
	}
	self := os.Getpid()
	buf := make([]byte, 0, 16<<10)
	var out []Marked
	for _, p := range ps {
		if p.Zombie || p.Pid == self || skip[p.Pgid] {
			continue
		}
		// Most processes are not ours: one read says so, without a pidfd.
		if !marked(p.Pid, markers, &buf) {
			continue
		}
		fd, err := unix.PidfdOpen(p.Pid, 0)
		if err != nil {
			continue
		}
		if !marked(p.Pid, markers, &buf) {
			_ = unix.Close(fd)
			continue
		}
		out = append(out, Marked{Pid: p.Pid, fd: fd})
	}
	return out
}

// marked reports whether pid's environment holds one of markers.
func marked(pid int, markers []string, buf *[]byte) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil || n == 0 {
			break
		}
	}
	*buf = b
	return holdsAny(b, markers)
}

// holdsAny reports whether the NUL-separated environment env has an entry
// equal to one of markers.
func holdsAny(env []byte, markers []string) bool {
	for _, m := range markers {
		if m == "" {
			continue
		}
		want := append([]byte(m), 0)
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			return true
		}
	}
	return false
}

// KillMarked SIGKILLs every live process whose environment holds marker
// (what is left of an ended command: a setsid daemon, a `nohup … &`),
// walking again until a walk finds none (one being killed may have just
// forked), at most 16 times. Each is held by a pidfd before its
// environment is read again, so what is killed is what was read.
func KillMarked(marker string) {
	for range 16 {
		ps, err := List()
		if err != nil {
			return
		}
		marked := FindMarked(ps, []string{marker}, nil)
		for _, m := range marked {
			m.Signal(unix.SIGKILL)
			m.Close()
		}
		if len(marked) == 0 {
			return
		}
	}
}
