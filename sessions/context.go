package sessions

import (
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

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
	// An image no request will carry again is not kept either: the
	// session holds its note (see agent.BoundImages).
	s.history = agent.BoundImages(s.history)
	if out.Usage.Size > 0 {
		s.usage = out.Usage
	}
}

// AddUsage records the context usage after a model response or a
// compaction, so a loaded session shows it at once.
func (s *Session) AddUsage(u agent.ContextUsage) {
	s.persist(store.Usage{Used: int64(u.Used), Size: int64(u.Size), Estimated: u.Estimated, Cost: u.Cost.Amount, Currency: u.Cost.Currency})
}

// AddCompaction records a compaction as it happens, on the turn's
// goroutine, after every message it covers was recorded: a load replays it
// and rebuilds the model's history from it (the summary, then the entries
// from the first kept message on). callID is the tool call the editor was
// shown.
func (s *Session) AddCompaction(c agent.Compaction) {
	s.mu.Lock()
	if s.stored == nil {
		s.mu.Unlock()
		return
	}
	var kept int64
	if c.Kept > 0 {
		if i := len(s.seqs) - c.Kept; i >= 0 {
			kept = s.seqs[i]
		}
	}
	if c.Kept > 0 && kept == 0 {
		s.mu.Unlock()
		// The kept part does not start at a stored message: storing the
		// compaction would lose it, so a load rebuilds the whole history,
		// which is still right, only longer.
		s.log.Warn("compaction not stored: its kept part does not start at a stored message", zap.Int("kept", c.Kept), zap.Int("known", len(s.seqs)))
		return
	}
	var prompt int64
	if c.PromptKept {
		// Counted from the end, as the kept part is: the conversation the
		// compaction saw ends where s.seqs does.
		if i := len(s.seqs) - (c.KeptFrom + c.Kept - c.PromptAt); i >= 0 && i < len(s.seqs) {
			prompt = s.seqs[i]
		}
		if prompt == 0 {
			s.mu.Unlock()
			s.log.Warn("compaction not stored: the prompt it kept is not a stored message", zap.Int("prompt_at", c.PromptAt), zap.Int("known", len(s.seqs)))
			return
		}
	}
	head := []int64{0}
	if prompt != 0 {
		head = append(head, prompt)
	}
	s.seqs = append(head, s.seqs[len(s.seqs)-c.Kept:]...)
	s.mu.Unlock()
	s.persist(store.Compaction{
		Summary: c.Summary, Replaced: c.Summarized(), KeptFromSeq: kept, PromptSeq: prompt,
		PreTokens: int64(c.PreTokens), PostTokens: int64(c.PostTokens),
		Trigger: c.Trigger, Focus: c.Focus, CallID: c.ID,
	})
}

// noteSeq notes the Seq of a message just added to the conversation.
func (s *Session) noteSeq(seq int64) {
	if seq == 0 {
		return
	}
	s.mu.Lock()
	s.seqs = append(s.seqs, seq)
	s.mu.Unlock()
}
