package proctab

import (
	"time"

	"golang.org/x/sys/unix"
)

// Ending is a set of processes to end (see End).
type Ending struct {
	// Sessions: every process group with a live member in one of these
	// sessions is ended.
	Sessions map[int]bool
	// Markers: every live process whose environment holds one of these
	// entries ("NAME=VALUE") is ended too, even one that left its session
	// (setsid, a double-forked daemon). Linux only (see FindMarked).
	Markers []string
	// Termed are groups that already had their SIGTERM: they get only the
	// SIGKILL after the grace.
	Termed map[int]bool
	// Grace is the time from End's start to the SIGKILL of what is left.
	Grace time.Duration
	// GiveUp, if positive, is how long after the SIGKILL End still waits
	// before it returns with something left (a process stuck in the kernel
	// is not helped by waiting longer). Zero waits until nothing is left.
	GiveUp time.Duration
}

// End is the one way a set of processes is ended: SIGTERM (and SIGCONT,
// so a stopped process gets it) once to each group and marked process as
// it is first seen, SIGKILL to everything left once the grace has passed,
// and a return when no process of the set can run any more. Nothing
// announces the death of processes that are not the caller's children, so
// it polls the table, backing off from 2ms to 50ms. The error is the
// table's: the caller still holds its own handles (pgids) to end.
func End(e Ending) error {
	start := time.Now()
	termed := make(map[int]bool, len(e.Termed))
	for g := range e.Termed {
		termed[-g] = true // groups as negative ids, pids as positive
	}
	wait := 2 * time.Millisecond
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		ps, err := List()
		if err != nil {
			return err
		}
		killing := time.Since(start) >= e.Grace
		if killing && e.GiveUp > 0 && time.Since(start) >= e.Grace+e.GiveUp {
			return nil
		}
		gs := groups(ps, e.Sessions)
		marked := FindMarked(ps, e.Markers, gs)
		if len(gs) == 0 && len(marked) == 0 {
			return nil
		}
		for g := range gs {
			if sig, ok := nextSignal(termed, -g, killing); ok {
				SignalGroup(g, sig)
			}
		}
		for _, m := range marked {
			if sig, ok := nextSignal(termed, m.Pid, killing); ok {
				m.Signal(sig)
				if sig == unix.SIGTERM {
					m.Signal(unix.SIGCONT)
				}
			}
			m.Close()
		}
		t.Reset(wait)
		<-t.C
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// nextSignal is what a process (or group: id < 0) gets this round: SIGKILL
// once killing, else SIGTERM the first time it is seen, else nothing.
func nextSignal(termed map[int]bool, id int, killing bool) (unix.Signal, bool) {
	switch {
	case killing:
		return unix.SIGKILL, true
	case !termed[id]:
		termed[id] = true
		return unix.SIGTERM, true
	}
	return 0, false
}
