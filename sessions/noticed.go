package sessions

import (
	"encoding/json"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// CallMax bounds, in bytes, what the stored entry of a tool call (a
// call's result with what the editor was shown of it, or a notice's tool
// call) adds to a session log: at most 1 MiB per call. The bash tools
// already bound the diffs of a call below it; this holds whatever the view
// (the output is stored twice: as the model read it and as shown).
const CallMax = 1 << 20

// callEnvelope is room for the entry's line around its data (seq, kind,
// time: under 100 bytes).
const callEnvelope = 256

// NoticedView is what the editor was shown of the finished tool call of a
// completion notice (a background task's end, with what the task changed),
// which no model call made: kept for replay.
type NoticedView struct {
	// ID is the tool call's id, as the editor got it.
	ID     string
	TaskID string
	// Text is the notice as the model read it.
	Text   string
	Title  string
	Kind   string
	Status string
	// Content, Locations and RawOutput are JSON, as the editor got them:
	// the content blocks, the locations and the rawOutput. Content and
	// Locations are nil in a view stored past CallMax.
	Content   json.RawMessage
	Locations json.RawMessage
	RawOutput json.RawMessage
	// Changed is what /undo takes back of what the task changed.
	Changed []tools.FileChange
}

// AddNoticed stores the tool call shown for a completion notice, in its
// place in the turn. A view whose entry would exceed CallMax is stored
// without its content and locations (a replay shows the notice's text);
// one still too large is not stored.
func (s *Session) AddNoticed(v NoticedView) {
	// What the task changed is undoable however its view is stored.
	defer s.addChanges(v.ID, v.Title, v.Changed)
	n := store.Noticed{CallID: v.ID, TaskID: v.TaskID, Text: v.Text, Title: v.Title, ToolKind: v.Kind, Status: v.Status,
		Content: v.Content, Locations: v.Locations, RawOutput: v.RawOutput}
	if entrySize(n) > CallMax-callEnvelope {
		s.log.Warn("notice's tool call stored without its diffs: over the cap",
			zap.String("task", v.TaskID), zap.Int("bytes", len(v.Content)+len(v.Locations)), zap.Int("cap", CallMax))
		n.Content, n.Locations = nil, nil
		if entrySize(n) > CallMax-callEnvelope {
			s.log.Warn("notice's tool call not stored: over the cap", zap.String("task", v.TaskID))
			return
		}
	}
	s.persist(n)
}

// entrySize is the bytes p takes in its entry's data; past the cap when
// it cannot be encoded (the store could not write it either).
func entrySize(p store.Payload) int {
	data, err := json.Marshal(p)
	if err != nil {
		return CallMax
	}
	return len(data)
}

// replayedNoticed is the replay step of a stored notice's tool call.
func replayedNoticed(v store.Noticed) Replayed {
	return Replayed{Noticed: &NoticedView{ID: v.CallID, TaskID: v.TaskID, Text: v.Text, Title: v.Title, Kind: v.ToolKind,
		Status: v.Status, Content: v.Content, Locations: v.Locations, RawOutput: v.RawOutput}}
}
