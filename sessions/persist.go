package sessions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/instructions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// notice is a completion notice queued for the next model request; id ties
// its queued and delivered entries in the store.
type notice struct {
	id   string
	text string
}

// ConfigModel is the config option id of the session's model.
const ConfigModel = "model"

// ConfigThinking is the config option id of the session's thought level.
const ConfigThinking = "thought_level"

// TitleMax bounds a session's title, in characters.
const TitleMax = 80

// persist appends p to the session's store, if it has one, and returns its
// Seq (0 when not stored). A failed write is logged, never fatal: the
// conversation goes on in memory.
func (s *Session) persist(p store.Payload) int64 {
	s.mu.Lock()
	st := s.stored
	s.updated = time.Now()
	s.mu.Unlock()
	if st == nil {
		return 0
	}
	seq, err := st.Append(p)
	if err != nil && !errors.Is(err, store.ErrClosed) {
		s.log.Warn("session not stored", zap.String("entry", string(p.Kind())), zap.Error(err))
	}
	return seq
}

// Sync makes what was persisted durable: at every turn boundary and after
// a change made outside a turn. What could not be written stays buffered
// and the next Sync tries again (a full disk that was freed meanwhile
// loses nothing); SaveNews says whether the editor should hear of it.
func (s *Session) Sync() {
	s.mu.Lock()
	st := s.stored
	s.mu.Unlock()
	if st == nil {
		return
	}
	err := st.Sync()
	if errors.Is(err, store.ErrClosed) {
		return
	}
	if err != nil {
		s.log.Warn("session not synced to the store", zap.Error(err))
	}
	s.mu.Lock()
	s.saveErr = err
	s.mu.Unlock()
}

// SaveNews is what the editor is to be told, at the end of a turn, about
// the session's storage: once when the session stops being saved (and
// why), once when it is saved again; "" otherwise. A full disk is not a
// reason to fail the turn: the conversation goes on in memory.
func (s *Session) SaveNews() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.saveErr != nil && !s.toldUnsaved:
		s.toldUnsaved = true
		return fmt.Sprintf("This session is not being saved: %v. The conversation goes on; saving is retried at the end of every turn, and you will be told when it works again.", s.saveErr)
	case s.saveErr == nil && s.toldUnsaved:
		s.toldUnsaved = false
		return "This session is being saved again; nothing of it was lost."
	}
	return ""
}

// closeStore syncs and releases the session's stored file.
func (s *Session) closeStore() {
	s.mu.Lock()
	st := s.stored
	s.stored = nil
	s.mu.Unlock()
	if st == nil {
		return
	}
	// Tasks still running are killed with the session and are not marked
	// ended: a later load tells the model they are gone.
	if err := st.Close(); err != nil {
		s.log.Warn("closing the stored session failed", zap.Error(err))
	}
}

func (s *Session) queueNotice(text string) {
	n := notice{id: uuid.NewString(), text: text}
	s.mu.Lock()
	s.notices = append(s.notices, n)
	s.mu.Unlock()
	s.persist(store.Notice{ID: n.id, State: store.NoticeQueued, Text: text})
}

// AddPrompt records a prompt as it arrives: the text the model is given and
// the blocks the editor sent (opaque JSON, for replay). The first prompt
// names the session; AddPrompt returns the title when it set it.
//
// The prompt's images are stored beside the log, and the entry names them.
func (s *Session) AddPrompt(text string, blocks json.RawMessage, images []agent.Image) (title string, set bool) {
	return s.AddPromptAbout(text, text, blocks, images)
}

// AddPromptAbout is AddPrompt for a prompt whose title is made from about
// (what the user typed: the text without what was attached to it) rather
// than from the whole text the model is given. A prompt with nothing to
// make a title of leaves the session untitled, for the next one.
func (s *Session) AddPromptAbout(text, about string, blocks json.RawMessage, images []agent.Image) (title string, set bool) {
	s.noteSeq(s.persist(store.Prompt{Text: text, Blocks: blocks, Images: s.putImages(images)}))
	s.mu.Lock()
	if s.title == "" {
		s.title = MakeTitle(about)
		title, set = s.title, s.title != ""
	}
	s.mu.Unlock()
	if set {
		s.persist(store.Title{Title: title})
	}
	return title, set
}

// putImages stores images beside the session's log and returns their
// refs; an image that cannot be stored is logged and left out (the turn
// goes on with it in memory).
func (s *Session) putImages(images []agent.Image) []store.Image {
	s.mu.Lock()
	st := s.stored
	s.mu.Unlock()
	if st == nil || len(images) == 0 {
		return nil
	}
	refs := make([]store.Image, 0, len(images))
	for _, img := range images {
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err == nil {
			var ref string
			if ref, err = st.PutImage(data); err == nil {
				refs = append(refs, store.Image{Ref: ref, MimeType: img.MimeType, Name: img.Name})
				continue
			}
		}
		s.log.Warn("image not stored; a load will not show it to the model", zap.String("image", img.Name), zap.Error(err))
	}
	return refs
}

// Image returns the stored bytes of a prompt's image, for a replay.
func (s *Session) Image(ref string) ([]byte, error) {
	s.mu.Lock()
	st := s.stored
	s.mu.Unlock()
	if st == nil {
		return nil, store.ErrClosed
	}
	return st.ReadImage(ref)
}

// ToolView is what the editor was shown of a finished tool call, kept for
// replay (all optional).
type ToolView struct {
	Title string
	Kind  string
	// RawInput and Content are JSON: the call's rawInput and its final
	// content blocks.
	RawInput json.RawMessage
	Status   string
	Content  json.RawMessage
	// Hidden: the editor was shown no tool call for it.
	Hidden bool
	// Locations is JSON: the files the call changed, for the editor.
	Locations json.RawMessage
	// Changed is what /undo takes back of the call's changes (stored in
	// the session's undo journal, beside the call's entry).
	Changed []tools.FileChange
}

// AddMessage records a message of a turn as it is produced: the model's
// messages and the tool results (with view, what the editor saw). User
// messages other than the prompt are notices, recorded as delivered when
// drained.
func (s *Session) AddMessage(m agent.Message, view *ToolView, isError bool) {
	switch m.Role {
	case agent.RoleAssistant:
		a := store.Assistant{Text: m.Content, Reasoning: m.ReasoningContent, ReasoningField: m.ReasoningField}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, store.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		s.noteSeq(s.persist(a))
	case agent.RoleTool:
		r := store.ToolResult{CallID: m.ToolCallID, Text: m.Content, IsError: isError, Images: s.putImages(m.Images)}
		if view != nil {
			r.Title, r.ToolKind, r.RawInput, r.Status, r.Content, r.Hidden = view.Title, view.Kind, view.RawInput, view.Status, view.Content, view.Hidden
			r.Locations = view.Locations
			if entrySize(r) > CallMax-callEnvelope {
				// The model's text is the history and stays; the editor's
				// copy goes, and a replay shows the text fenced.
				s.log.Warn("tool call stored without what the editor was shown of it: over the cap",
					zap.String("call", m.ToolCallID), zap.Int("bytes", len(r.Content)+len(r.Locations)), zap.Int("cap", CallMax))
				r.Content, r.Locations = nil, nil
			}
		}
		s.noteSeq(s.persist(r))
		if view != nil {
			s.addChanges(m.ToolCallID, view.Title, view.Changed)
		}
	}
}

// MakeTitle is a session's title from its first prompt: the first
// non-empty line outside a fenced block (code pasted into the prompt says
// little of what the thread is about), at most TitleMax characters, cut at
// a word when it is longer.
func MakeTitle(prompt string) string {
	line, fenced := "", false
	for _, l := range strings.Split(prompt, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~") {
			fenced = !fenced
			continue
		}
		if l != "" && !fenced {
			line = l
			break
		}
	}
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) <= TitleMax {
		return line
	}
	runes := []rune(line)
	cut := string(runes[:TitleMax])
	if runes[TitleMax] != ' ' {
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimSpace(cut)
}

// Title returns the session's title; empty until the first prompt.
func (s *Session) Title() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.title
}

// Updated is when the session last changed in this process (zero if not
// since it was created or loaded).
func (s *Session) Updated() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updated
}

// Model returns the session's model option; empty means the configured
// default.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// SetModel sets the model used from the next model request, persisted at
// once. The caller checks the value.
func (s *Session) SetModel(model string) {
	s.setOption(&s.model, ConfigModel, model)
}

// Thinking returns the session's thought level option; empty means the
// configured default.
func (s *Session) Thinking() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thinking
}

// SetThinking sets the thought level used from the next model request,
// persisted at once. The caller checks the value.
func (s *Session) SetThinking(level string) {
	s.setOption(&s.thinking, ConfigThinking, level)
}

// setOption sets a config option's field (guarded by s.mu) and, when it
// changed, stores it at once.
func (s *Session) setOption(field *string, id, value string) {
	s.mu.Lock()
	changed := *field != value
	*field = value
	s.mu.Unlock()
	if changed {
		s.persist(store.Config{OptionID: id, Value: value})
		s.Sync()
	}
}

// TaskGone reports whether id was a task of this session in the process
// that ran it before this one: it was stopped when that process ended.
func (s *Session) TaskGone(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone[id]
}

// TaskStarted records that a background task of the session started.
func (r *Registry) TaskStarted(sessionID, taskID, command string) {
	if s, err := r.Get(sessionID); err == nil {
		s.persist(store.TaskStarted{ID: taskID, Command: command})
	}
}

// TaskEnded records that a background task of the session ended.
func (r *Registry) TaskEnded(sessionID, taskID, state string) {
	if s, err := r.Get(sessionID); err == nil {
		s.persist(store.TaskEnded{ID: taskID, State: state})
	}
}

// Persistent reports whether sessions are stored.
func (r *Registry) Persistent() bool { return r.store != nil }

// Instructions reads the session's project instruction files for each
// prompt and remembers what the editor was shown of them. A session loaded
// after a restart starts afresh: it reads them again and shows them again.
func (s *Session) Instructions() *instructions.Reader { return &s.instructions }

// Plan returns the session's plan; nil until the model made one.
func (s *Session) Plan() *tools.Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plan
}

// SetPlan makes p the session's plan and stores it; the same plan again is
// not stored twice.
func (s *Session) SetPlan(p *tools.Plan) {
	if p == nil {
		return
	}
	s.mu.Lock()
	same := s.plan != nil && reflect.DeepEqual(*s.plan, *p)
	s.plan = p
	s.mu.Unlock()
	if same {
		return
	}
	sp := store.Plan{Explanation: p.Explanation, Entries: make([]store.PlanEntry, 0, len(p.Entries))}
	for _, e := range p.Entries {
		sp.Entries = append(sp.Entries, store.PlanEntry{Step: e.Step, Status: e.Status})
	}
	s.persist(sp)
}

// PlanOf is the plan a stored entry holds.
func PlanOf(p store.Plan) *tools.Plan {
	tp := &tools.Plan{Explanation: p.Explanation, Entries: make([]tools.PlanEntry, 0, len(p.Entries))}
	for _, e := range p.Entries {
		tp.Entries = append(tp.Entries, tools.PlanEntry{Step: e.Step, Status: e.Status})
	}
	return tp
}
