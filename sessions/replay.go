package sessions

import (
	"encoding/json"
	"fmt"
	"iter"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Replayed is one step of a conversation as the editor saw it, for a
// replay (session/load). Exactly one field is set.
type Replayed struct {
	Prompt  *ReplayedPrompt
	Message *ReplayedMessage
	Call    *ReplayedCall
	// Plan is the plan as the model set it.
	Plan *tools.Plan
	// Compaction is a compaction of the history, ended.
	Compaction *agent.Compaction
	// Noticed is the tool call shown for a completion notice.
	Noticed *NoticedView
}

// ReplayedPrompt is a prompt the user sent.
type ReplayedPrompt struct {
	// Text is the prompt as the model was given it.
	Text string
	// Blocks is the prompt as the editor sent it (the JSON given to
	// AddPrompt), its images without their data; nil when not kept.
	Blocks json.RawMessage
	// Images are the refs of the prompt's images (Session.Image reads
	// one), in the order of its image blocks.
	Images []string
}

// ReplayedMessage is a message of the model.
type ReplayedMessage struct {
	// ID is the id the editor was given for the text's chunks; empty if
	// none.
	ID        string
	Text      string
	Reasoning string
}

// ReplayedCall is a tool call that ended, as the editor was shown it.
type ReplayedCall struct {
	ID string
	// Name is the tool's name, from the model's call.
	Name string
	// Text is the result the model was given.
	Text    string
	IsError bool
	// View is what the editor saw (given to AddMessage); never Hidden.
	View ToolView
}

// replay is the session's conversation as the editor saw it.
func (s *Session) replay() iter.Seq[Replayed] {
	return func(yield func(Replayed) bool) {
		names := map[string]string{}
		for _, e := range s.replayEntries() {
			r, ok := replayed(e, names)
			if ok && !yield(r) {
				return
			}
		}
	}
}

// replayed is what the editor is shown again of entry e, if anything;
// names maps the call ids met so far to their tools' names.
func replayed(e store.Entry, names map[string]string) (Replayed, bool) {
	p, err := e.Decode()
	if err != nil {
		return Replayed{}, false
	}
	switch v := p.(type) {
	case store.Prompt:
		rp := &ReplayedPrompt{Text: v.Text, Blocks: v.Blocks}
		for _, im := range v.Images {
			rp.Images = append(rp.Images, im.Ref)
		}
		return Replayed{Prompt: rp}, true
	case store.Assistant:
		for _, c := range v.ToolCalls {
			names[c.ID] = c.Name
		}
		return Replayed{Message: &ReplayedMessage{ID: v.MessageID, Text: v.Text, Reasoning: v.Reasoning}}, true
	case store.ToolResult:
		if v.Hidden {
			return Replayed{}, false
		}
		return Replayed{Call: &ReplayedCall{ID: v.CallID, Name: names[v.CallID], Text: v.Text, IsError: v.IsError, View: ToolView{
			Title: v.Title, Kind: v.ToolKind, RawInput: v.RawInput, Status: v.Status, Content: v.Content, Locations: v.Locations,
		}}}, true
	case store.Plan:
		return Replayed{Plan: PlanOf(v)}, true
	case store.Compaction:
		c := agent.Compaction{ID: v.CallID, Trigger: v.Trigger, Focus: v.Focus, KeptFrom: v.Replaced,
			PreTokens: int(v.PreTokens), PostTokens: int(v.PostTokens)}
		if c.ID == "" {
			c.ID = fmt.Sprintf("compact-%d", e.Seq)
		}
		return Replayed{Compaction: &c}, true
	case store.Noticed:
		return replayedNoticed(v), true
	}
	return Replayed{}, false
}

// replayEntries is a live session's conversation as entries: read back
// from its store as they are ranged, or made from its history when it has
// none (sessions not stored), with what a replay can show of it.
func (s *Session) replayEntries() iter.Seq2[int, store.Entry] {
	return func(yield func(int, store.Entry) bool) {
		s.mu.Lock()
		st := s.stored
		s.mu.Unlock()
		i := 0
		if st != nil {
			stopped := false
			var gc collector
			err := st.Scan(func(e store.Entry) bool {
				gc.streamed(len(e.Data))
				if !yield(i, e) {
					stopped = true
					return false
				}
				i++
				return true
			})
			switch {
			case err == nil, stopped:
				return
			case i > 0:
				s.log.Warn("stored session read back only in part for a replay", zap.Error(err))
				return
			}
			s.log.Warn("stored session not read back for a replay; replaying its history", zap.Error(err))
		}
		for i, e := range s.historyEntries() {
			if !yield(i, e) {
				return
			}
		}
	}
}

// historyEntries is the session's history as entries, for the replay of a
// session that is not stored.
func (s *Session) historyEntries() []store.Entry {
	s.mu.Lock()
	hist := append([]agent.Message(nil), s.history...)
	s.mu.Unlock()
	var out []store.Entry
	for i, m := range hist {
		var p store.Payload
		switch m.Role {
		case agent.RoleUser:
			p = store.Prompt{Text: m.Content}
		case agent.RoleAssistant:
			a := store.Assistant{Text: m.Content, Reasoning: m.ReasoningContent}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, store.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
			p = a
		case agent.RoleTool:
			p = store.ToolResult{CallID: m.ToolCallID, Text: m.Content}
		default:
			continue
		}
		data, err := json.Marshal(p)
		if err != nil {
			continue
		}
		out = append(out, store.Entry{Seq: int64(i + 1), Kind: p.Kind(), Data: data})
	}
	return out
}
