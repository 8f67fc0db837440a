package execclient

import (
	"context"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// handTimers is a silence clock fired by the test.
type handTimers struct {
	// mu guards pending.
	mu      sync.Mutex
	pending []func()
}

type handTimer struct{}

func (handTimer) Stop() bool { return true }

func (h *handTimers) start(_ time.Duration, f func()) stopper {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, f)
	return handTimer{}
}

// fireAll runs every timer ever started, stale ones included: a timer
// whose Stop came too late must stay quiet.
func (h *handTimers) fireAll() {
	h.mu.Lock()
	fs := append([]func(){}, h.pending...)
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func TestSilence(t *testing.T) {
	t.Parallel()
	toolCall := acpsdk.SessionUpdate{ToolCall: &acpsdk.SessionUpdateToolCall{ToolCallId: "c1", Status: acpsdk.ToolCallStatusPending}}
	done := acpsdk.ToolCallStatusCompleted
	toolDone := acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{ToolCallId: "c1", Status: &done}}
	text := acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{Content: acpsdk.TextBlock("hi")}}
	tests := []struct {
		name  string
		steps func(s *silence)
		want  int
	}{
		{name: "silent from the start", steps: func(s *silence) { s.begin() }, want: 1},
		{name: "silent after text", steps: func(s *silence) { s.begin(); s.update(text) }, want: 1},
		{name: "a running command is not the model's silence", steps: func(s *silence) { s.begin(); s.update(toolCall) }, want: 0},
		{name: "silent after the command finished", steps: func(s *silence) { s.begin(); s.update(toolCall); s.update(toolDone) }, want: 1},
		{name: "nothing after the prompt answered", steps: func(s *silence) { s.begin(); s.update(text); s.end() }, want: 0},
		{name: "a question waiting is the person's time", steps: func(s *silence) { s.begin(); s.hold(true) }, want: 0},
		{name: "silent again after the answer", steps: func(s *silence) { s.begin(); s.hold(true); s.hold(false) }, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h handTimers
			shown := 0
			s := newSilence(time.Hour, func(time.Duration) { shown++ }, func() {})
			s.start = h.start
			tt.steps(s)
			h.fireAll()
			if shown != tt.want {
				t.Errorf("notice shown %d times, want %d", shown, tt.want)
			}
		})
	}
	var nilSilence *silence
	nilSilence.begin()
	nilSilence.update(text)
	nilSilence.end()
}

// TestSilenceCounts: the notice is shown again each tick with the time the
// model has been silent, and cleared once when it speaks.
func TestSilenceCounts(t *testing.T) {
	t.Parallel()
	var h handTimers
	now := time.Unix(1000, 0)
	var shown []time.Duration
	cleared := 0
	s := newSilence(2*time.Second, func(d time.Duration) { shown = append(shown, d) }, func() { cleared++ })
	s.start = h.start
	s.now = func() time.Time { return now }
	s.begin()
	now = now.Add(2 * time.Second)
	h.fireAll() // the first notice, which starts the ticks
	now = now.Add(time.Second)
	h.mu.Lock()
	tickFn := h.pending[len(h.pending)-1]
	h.mu.Unlock()
	tickFn()
	if len(shown) != 2 || shown[0] != 2*time.Second || shown[1] != 3*time.Second {
		t.Errorf("shown %v, want [2s 3s]", shown)
	}
	s.update(acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{Content: acpsdk.TextBlock("hi")}})
	s.end()
	if cleared != 1 {
		t.Errorf("cleared %d times, want 1", cleared)
	}
}

// TestSilenceRealClock: with the real clock the notice comes by itself.
func TestSilenceRealClock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shown := make(chan struct{}, 1)
	s := newSilence(time.Millisecond, func(time.Duration) {
		select {
		case shown <- struct{}{}:
		default:
		}
	}, func() {})
	s.begin()
	defer s.end()
	select {
	case <-shown:
	case <-ctx.Done():
		t.Fatal("no notice")
	}
}
