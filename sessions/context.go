package sessions

import "github.com/dsh-acp/dsh-acp/agent"

// Usage returns the context usage after the session's last model response
// or compaction; zero Size when there was none.
func (s *Session) Usage() agent.ContextUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Finish records what a turn left: its messages are appended, or, when a
// compaction replaced the older history (out.History set), the history is
// that; and the usage, if the turn measured one.
func (s *Session) Finish(out agent.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if out.History != nil {
		s.history = append([]agent.Message(nil), out.History...)
	} else {
		s.history = append(s.history, out.Messages...)
	}
	if out.Usage.Size > 0 {
		s.usage = out.Usage
	}
}
