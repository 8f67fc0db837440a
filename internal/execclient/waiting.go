package execclient

import (
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// ModelSilence is how long exec lets the model say nothing before it tells a
// person at a terminal that it is waiting.
const ModelSilence = 2 * time.Second

// silence calls show when the model has been silent for after — from the
// start of the prompt, or since the last update, while no tool call is
// running (a running command's silence is the command's) and no question
// waits for the person — and again every second (tick) with the time it
// has been silent, for a line updated in place; clear when the silence
// ends after show was called. A nil *silence does nothing, so the runner
// can leave it out when stderr is not a terminal.
type silence struct {
	after time.Duration
	show  func(silent time.Duration)
	clear func()
	// start is time.AfterFunc; tests replace it to fire by hand.
	start func(time.Duration, func()) stopper
	// now is time.Now; tests replace it.
	now func() time.Time

	// mu guards everything below; show and clear are called with it held,
	// so that no notice comes after stop returned.
	mu      sync.Mutex
	timer   stopper
	gen     int
	open    map[acpsdk.ToolCallId]bool
	held    int
	since   time.Time
	shown   bool
	stopped bool
}

// tick is how often the notice's elapsed time is updated.
const tick = time.Second

type stopper interface{ Stop() bool }

func newSilence(after time.Duration, show func(time.Duration), clear func()) *silence {
	return &silence{
		after: after,
		show:  show,
		clear: clear,
		start: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) },
		now:   time.Now,
		open:  make(map[acpsdk.ToolCallId]bool),
	}
}

// hold stops the clock while a question waits for the person (on), and
// starts it again after (off): that wait is not the model's.
func (s *silence) hold(on bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.held++
	} else {
		s.held--
	}
	s.rearm()
}

// begin starts the clock: the prompt is on its way to the model.
func (s *silence) begin() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rearm()
}

// update restarts the clock on any session update, and keeps it stopped
// while a tool call is running.
func (s *silence) update(u acpsdk.SessionUpdate) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case u.ToolCall != nil:
		if !finished(u.ToolCall.Status) {
			s.open[u.ToolCall.ToolCallId] = true
		}
	case u.ToolCallUpdate != nil:
		if u.ToolCallUpdate.Status != nil && finished(*u.ToolCallUpdate.Status) {
			delete(s.open, u.ToolCallUpdate.ToolCallId)
		}
	}
	s.rearm()
}

// end stops the clock for good: the prompt has answered.
func (s *silence) end() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.rearm()
}

// rearm cancels the pending notice and, unless a tool call is running or
// the prompt is over, schedules the next one. Called with mu held.
func (s *silence) rearm() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.gen++
	if s.shown {
		s.clear()
		s.shown = false
	}
	if s.stopped || len(s.open) > 0 || s.held > 0 {
		return
	}
	gen := s.gen
	s.since = s.now()
	s.timer = s.start(s.after, func() { s.fire(gen) })
}

func (s *silence) fire(gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A timer that Stop could not catch in time must not speak for a
	// period that has ended.
	if gen != s.gen || s.stopped || len(s.open) > 0 || s.held > 0 {
		return
	}
	s.show(s.now().Sub(s.since))
	s.shown = true
	s.timer = s.start(tick, func() { s.fire(gen) })
}

func finished(st acpsdk.ToolCallStatus) bool {
	return st == acpsdk.ToolCallStatusCompleted || st == acpsdk.ToolCallStatusFailed
}
