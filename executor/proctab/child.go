package proctab

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// SignalProcess sends sig to p, a child of this process not yet waited for
// (so its pid names it still; Go signals it through a pidfd where it can),
// and SIGCONT after a SIGTERM (see deliver).
func SignalProcess(p *os.Process, sig unix.Signal) error {
	return deliver(func(s unix.Signal) error { return p.Signal(s) }, sig)
}

// EndChild ends p, a child of this process whose owner waits for it and
// closes exited once it has: SIGTERM, then SIGKILL if it has not exited
// after grace (at once when grace is 0), and a return once it has exited.
// The owner's wait is what tells, so nothing polls.
func EndChild(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	if grace > 0 {
		_ = SignalProcess(p, unix.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
		}
	}
	_ = SignalProcess(p, unix.SIGKILL)
	<-exited
}
