// Package proctab reads the process table to find and signal the members of
// a command's session: the processes that left its process group (coreutils
// `timeout`, job control under `set -m`) but not its session, which a group
// signal cannot reach. A table walk costs O(processes on the machine), so
// callers walk only when a session is being ended, never per command.
package proctab

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Proc is one entry of the process table.
type Proc struct {
	Pid  int
	Pgid int
	Sid  int
	// Zombie: the process has exited and waits to be reaped; it cannot run
	// and signals do nothing to it.
	Zombie bool
}

// List returns every process the table shows (Linux: /proc; macOS: the
// kern.proc sysctl). Processes that vanish while it reads are skipped.
func List() ([]Proc, error) {
	ps, err := list()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	return ps, nil
}

// groups returns the process groups that have a live member in one of
// sessions, from the table ps.
func groups(ps []Proc, sessions map[int]bool) map[int]bool {
	out := make(map[int]bool)
	for _, p := range ps {
		if !p.Zombie && sessions[p.Sid] {
			out[p.Pgid] = true
		}
	}
	return out
}

// SignalSession sends sig to every process group of session sid that has a
// live member, except the leader's own group (pgid == sid), which the caller
// signals directly, and to every other live process whose environment
// holds one of markers (what left the session: none found on macOS, see
// FindMarked), each once, as SignalGroup sends it. It returns how many
// groups and marked processes it signalled. A process group never spans
// sessions, so no group outside sid is touched.
func SignalSession(sid int, sig unix.Signal, markers ...string) (int, error) {
	if sid <= 1 {
		return 0, fmt.Errorf("signal session %d: not a command's session", sid)
	}
	ps, err := List()
	if err != nil {
		return 0, err
	}
	n := 0
	gs := groups(ps, map[int]bool{sid: true})
	for pgid := range gs {
		if pgid != sid && !errors.Is(SignalGroup(pgid, sig), unix.ESRCH) {
			n++
		}
	}
	// The session's groups were signalled: a process there must not get
	// sig twice (a trap would run twice).
	for _, m := range FindMarked(ps, markers, gs) {
		m.Signal(sig)
		m.Close()
		n++
	}
	return n, nil
}

// SignalGroup sends sig to process group pgid, and SIGCONT after a SIGTERM
// (see deliver). An error wrapping ESRCH means the group is gone.
func SignalGroup(pgid int, sig unix.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("signal group %d: not a command's group", pgid)
	}
	return deliver(func(s unix.Signal) error { return unix.Kill(-pgid, s) }, sig)
}

// deliver sends sig through send and, once a SIGTERM was delivered,
// SIGCONT: a stopped process would hold the SIGTERM pending until
// continued. Every signal that ends something goes through here.
func deliver(send func(unix.Signal) error, sig unix.Signal) error {
	err := send(sig)
	if err == nil && sig == unix.SIGTERM {
		_ = send(unix.SIGCONT)
	}
	return err
}

// SessionAlive reports whether session sid has a live member. An error
// reading the table counts as alive: the caller keeps trying.
func SessionAlive(sid int) bool { return SessionOrMarkedAlive(sid, "") }

// GroupAlive reports whether process group pgid has a member that can still
// run. Zombies do not count: one whose new parent never reaps it (a PID 1
// that does not wait) would otherwise keep the group alive for ever. The
// table is read only when the kernel says the group exists.
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	if err := unix.Kill(-pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	ps, err := List()
	if err != nil {
		return true
	}
	for _, p := range ps {
		if p.Pgid == pgid && !p.Zombie {
			return true
		}
	}
	return false
}

// SessionOrMarkedAlive reports, in one walk of the table, whether session
// sid has a live member or a live process's environment holds marker (if
// set). An error reading the table counts as alive: the caller keeps
// trying.
func SessionOrMarkedAlive(sid int, marker string) bool {
	ps, err := List()
	if err != nil {
		return true
	}
	for _, p := range ps {
		if p.Sid == sid && !p.Zombie {
			return true
		}
	}
	if marker == "" {
		return false
	}
	marked := FindMarked(ps, []string{marker}, nil)
	for _, m := range marked {
		m.Close()
	}
	return len(marked) > 0
}
