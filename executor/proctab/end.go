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
	// Targets are processes this table does not show (a container's, which
	// its helper signals): End signals them and asks whether they live
	// through their owner, on the same schedule as the rest.
	Targets []Target
	// Termed are groups that already had their SIGTERM: they get only the
	// SIGKILL after the grace.
	Termed map[int]bool
	// AllTermed: everything of the set already had its SIGTERM (its owner
	// began ending it, which walks the session): End sends only the
	// SIGKILL after the grace, so no trap runs twice.
	AllTermed bool
	// Grace is the time from End's start to the SIGKILL of what is left.
	Grace time.Duration
	// GiveUp, if positive, is how long after the SIGKILL End still waits
	// before it returns with something left (a process stuck in the kernel
	// is not helped by waiting longer). Zero waits until nothing is left.
	GiveUp time.Duration
}

// Target is a process (or group) End reaches through its owner.
type Target interface {
	// Signal sends sig, SIGCONT after SIGTERM as SignalGroup does.
	Signal(sig unix.Signal)
	// Alive reports whether anything of it can still run.
	Alive() bool
}

// End is the one way a set of processes is ended: SIGTERM (and SIGCONT,
// so a stopped process gets it) once to each group, marked process and
// target as it is first seen, SIGKILL to everything left once the grace
// has passed, and a return when no process of the set can run any more.
// Nothing announces the death of processes that are not the caller's
// children, so it polls, backing off from 2ms to 50ms. The error is the
// table's: the caller still holds its own handles (pgids) to end.
func End(e Ending) error {
	start := time.Now()
	r := ending{Ending: e, termed: make(map[int]bool, len(e.Termed)), targets: make(map[Target]bool)}
	for g := range e.Termed {
		r.termed[-g] = true // groups as negative ids, pids as positive
	}
	wait := 2 * time.Millisecond
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		since := time.Since(start)
		killing := since >= e.Grace
		if killing && e.GiveUp > 0 && since >= e.Grace+e.GiveUp {
			return nil
		}
		left, err := r.round(killing)
		if err != nil || !left {
			return err
		}
		t.Reset(wait)
		<-t.C
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// ending is one End's progress.
type ending struct {
	Ending
	termed  map[int]bool    // groups (negative) and pids that had SIGTERM
	targets map[Target]bool // targets that had SIGTERM
}

// round signals what is left of the set (see next) and reports whether
// anything was.
func (r *ending) round(killing bool) (bool, error) {
	left := false
	if len(r.Sessions) > 0 || len(r.Markers) > 0 {
		ps, err := List()
		if err != nil {
			return false, err
		}
		gs := groups(ps, r.Sessions)
		marked := FindMarked(ps, r.Markers, gs)
		left = len(gs) > 0 || len(marked) > 0
		for g := range gs {
			if sig, ok := next(r, r.termed, -g, killing); ok {
				_ = SignalGroup(g, sig)
			}
		}
		for _, m := range marked {
			if sig, ok := next(r, r.termed, m.Pid, killing); ok {
				m.Signal(sig)
			}
			m.Close()
		}
	}
	for _, tg := range r.Targets {
		if !tg.Alive() {
			continue
		}
		left = true
		if sig, ok := next(r, r.targets, tg, killing); ok {
			tg.Signal(sig)
		}
	}
	return left, nil
}

// next is what a process, group (id < 0) or target gets this round:
// SIGKILL once killing, else SIGTERM the first time it is seen (unless all
// had theirs), else nothing.
func next[K comparable](r *ending, termed map[K]bool, id K, killing bool) (unix.Signal, bool) {
	switch {
	case killing:
		return unix.SIGKILL, true
	case !r.AllTermed && !termed[id]:
		termed[id] = true
		return unix.SIGTERM, true
	}
	return 0, false
}
