package sessions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// More sentinels of the stored sessions.
var (
	// ErrBusy: the session is live in another dsh-acp process.
	ErrBusy = errors.New("session is open in another dsh-acp process")
	// ErrUnusable: the session's file was written by a newer dsh-acp or is
	// not a dsh-acp file.
	ErrUnusable = errors.New("session file is not usable by this dsh-acp")
	// ErrBadCursor: a list cursor this registry did not make.
	ErrBadCursor = errors.New("malformed list cursor")
)

// Loaded is a session made live by Open.
type Loaded struct {
	Session *Session
	// Entries are the session's conversation as stored entries, for replay:
	// read back from its store, also when the session was live here already
	// (a client reopening a thread it never closed shows it whole).
	Entries []store.Entry
	// WasLive: the session was live in this process already and is
	// returned as is.
	WasLive bool
}

// Open makes a stored session live with cwd as its working directory, or
// returns it if it is live here already. Its history, mode, model, always
// allow memory and undelivered notices are restored; the tasks that were
// running when its process stopped are marked gone, and its next model
// request is told so once.
func (r *Registry) Open(id, cwd string) (Loaded, error) {
	cwd, err := checkCwd(cwd)
	if err != nil {
		return Loaded{}, err
	}
	for {
		r.mu.Lock()
		if s := r.byID[id]; s != nil {
			r.mu.Unlock()
			return Loaded{Session: s, Entries: s.replayEntries(), WasLive: true}, nil
		}
		wait := r.loading[id]
		if wait == nil {
			done := make(chan struct{})
			r.loading[id] = done
			r.mu.Unlock()
			l, err := r.open(id, cwd)
			r.mu.Lock()
			delete(r.loading, id)
			if err == nil {
				r.byID[id] = l.Session
			}
			r.mu.Unlock()
			close(done)
			return l, err
		}
		r.mu.Unlock()
		<-wait
	}
}

func (r *Registry) open(id, cwd string) (Loaded, error) {
	if r.store == nil {
		return Loaded{}, fmt.Errorf("%w: %s (sessions are not stored: --no-persist)", ErrNotFound, id)
	}
	stored, err := r.store.Open(id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadID):
		return Loaded{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	case errors.Is(err, store.ErrLocked):
		return Loaded{}, fmt.Errorf("%w: session %s is live in another dsh-acp process (another editor window?); close it there first", ErrBusy, id)
	case errors.Is(err, store.ErrForeign), errors.Is(err, store.ErrNewerVersion):
		return Loaded{}, fmt.Errorf("%w: %s: %w", ErrUnusable, id, err)
	case err != nil:
		return Loaded{}, fmt.Errorf("open stored session %s: %w", id, err)
	}
	entries := stored.Entries()
	state := stored.State()
	// The caller's replay is the last use of the entries: the live session
	// keeps its history, not its log.
	stored.ReleaseEntries()
	s := r.newSession(id, cwd)
	s.stored = stored
	s.history, s.seqs = history(entries, state, imageLoader(stored, s.log))
	s.plan = lastPlan(entries)
	s.title = state.Title
	// A stored mode this process does not offer (the sandbox is off now)
	// falls back to asking, never to running unconfined unasked.
	s.mode = ModeAsk
	switch m := Mode(state.Mode); {
	case r.Offers(m):
		s.mode = m
	case m.Valid():
		s.mode = ModeAsk
	}
	s.model = state.Config[ConfigModel]
	s.thinking = state.Config[ConfigThinking]
	if u := state.Usage; u != nil {
		s.usage = agent.ContextUsage{Used: int(u.Used), Size: int(u.Size), Estimated: u.Estimated,
			Cost: agent.Cost{Amount: u.Cost, Currency: u.Currency}}
	}
	for _, k := range state.AlwaysAllow {
		s.allowed[k] = true
	}
	for _, n := range state.PendingNotices {
		s.notices = append(s.notices, notice{id: n.ID, text: n.Text})
	}
	s.gone = map[string]bool{}
	for _, e := range entries {
		if e.Kind != store.KindTaskStarted {
			continue
		}
		if p, err := e.Decode(); err == nil {
			s.gone[p.(store.TaskStarted).ID] = true
		}
	}
	if cwd != state.Cwd {
		s.persist(store.Cwd{Cwd: cwd})
	}
	if len(state.RunningTasks) > 0 {
		for _, t := range state.RunningTasks {
			s.persist(store.TaskEnded{ID: t, State: "gone"})
		}
		s.queueNotice(r.goneNotice(state.RunningTasks))
	}
	s.Sync()
	return Loaded{Session: s, Entries: entries}, nil
}

// replayEntries is a live session's conversation as entries: read back
// from its store, or made from its history when it has none (sessions not
// stored), with what a replay can show of it.
func (s *Session) replayEntries() []store.Entry {
	s.mu.Lock()
	st := s.stored
	hist := append([]agent.Message(nil), s.history...)
	s.mu.Unlock()
	if st != nil {
		entries, err := st.ReadEntries()
		if err == nil {
			return entries
		}
		s.log.Warn("stored session not read back for a replay; replaying its history", zap.Error(err))
	}
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

// abortedText answers, in a rebuilt history, a tool call whose result was
// never stored (the process died mid-call): the API needs an answer for
// every call, and this is what the agent says of a call it stopped.
const abortedText = "Error: command aborted"

// History rebuilds the model's conversation from stored entries: the same
// messages, with the same tool call ids, that the live session had.
func History(entries []store.Entry, state store.State) []agent.Message {
	msgs, _ := history(entries, state, nil)
	return msgs
}

// imageLoader reads a prompt's images back from beside the session's log.
// An image that cannot be read is left out and logged: the conversation
// still loads.
func imageLoader(stored *store.Session, log *zap.Logger) func([]store.Image) []agent.Image {
	return func(refs []store.Image) []agent.Image {
		var out []agent.Image
		for _, r := range refs {
			data, err := stored.ReadImage(r.Ref)
			if err != nil {
				log.Warn("stored image not readable; the model will not see it", zap.String("image", r.Name), zap.Error(err))
				continue
			}
			out = append(out, agent.Image{MimeType: r.MimeType, Data: base64.StdEncoding.EncodeToString(data), Name: r.Name})
		}
		return out
	}
}

// history is History with, for each message, the Seq of the entry it was
// rebuilt from (the first of a group of notices; 0 for the summary and for
// the answers of calls that never got one).
//
// images, when set, reads a prompt's stored images back; nil leaves them
// out.
func history(entries []store.Entry, state store.State, images func([]store.Image) []agent.Image) ([]agent.Message, []int64) {
	var msgs []agent.Message
	var seqs []int64
	add := func(seq int64, m agent.Message) {
		msgs = append(msgs, m)
		seqs = append(seqs, seq)
	}
	from := compactedStart(entries, state.Compaction, add)
	var open []string
	answered := map[string]bool{}
	var notices []string
	var noticeSeq int64
	closeCalls := func() {
		for _, id := range open {
			if !answered[id] {
				add(0, agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: abortedText})
			}
		}
		open = nil
	}
	endNotices := func() {
		if len(notices) > 0 {
			add(noticeSeq, agent.Message{Role: agent.RoleUser, Content: strings.Join(notices, "\n")})
			notices = nil
		}
	}
	for _, e := range entries {
		if e.Seq < from {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		switch v := p.(type) {
		case store.Prompt:
			closeCalls()
			endNotices()
			m := agent.Message{Role: agent.RoleUser, Content: v.Text}
			if images != nil && len(v.Images) > 0 {
				m.Images = images(v.Images)
			}
			add(e.Seq, m)
		case store.Notice:
			if v.State == store.NoticeDelivered {
				closeCalls()
				if len(notices) == 0 {
					noticeSeq = e.Seq
				}
				notices = append(notices, v.Text)
			}
		case store.Assistant:
			closeCalls()
			endNotices()
			m := agent.Message{Role: agent.RoleAssistant, Content: v.Text, ReasoningContent: v.Reasoning, ReasoningField: v.ReasoningField}
			for _, c := range v.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
				open = append(open, c.ID)
			}
			add(e.Seq, m)
		case store.ToolResult:
			endNotices()
			answered[v.CallID] = true
			add(e.Seq, agent.Message{Role: agent.RoleTool, ToolCallID: v.CallID, Content: v.Text})
		}
	}
	closeCalls()
	endNotices()
	return msgs, seqs
}

// compactedStart adds what stands for the part of the history a compaction
// replaced (its summary, then the prompt it kept word for word, if any) and
// returns the Seq of the first entry after it; 0 without a compaction.
func compactedStart(entries []store.Entry, c *store.Compaction, add func(int64, agent.Message)) int64 {
	if c == nil {
		return 0
	}
	add(0, agent.SummaryMessage(c.Summary))
	if c.PromptSeq != 0 {
		for _, e := range entries {
			if e.Seq != c.PromptSeq {
				continue
			}
			if p, err := e.Decode(); err == nil && e.Kind == store.KindPrompt {
				add(e.Seq, agent.Message{Role: agent.RoleUser, Content: p.(store.Prompt).Text})
			}
			break
		}
	}
	from := c.KeptFromSeq
	if from == 0 {
		// None kept: the history goes on after the compaction entry.
		for _, e := range entries {
			if e.Kind == store.KindCompaction {
				from = e.Seq + 1
			}
		}
	}
	return from
}

// Delete closes the session if it is live here and removes it from the
// store.
func (r *Registry) Delete(id string) error {
	live := r.Close(id) == nil
	if r.store == nil {
		if live {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	err := r.store.Delete(id)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadID):
		if live {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	case errors.Is(err, store.ErrLocked):
		return fmt.Errorf("%w: session %s is live in another dsh-acp process; close it there first", ErrBusy, id)
	}
	return fmt.Errorf("delete session %s: %w", id, err)
}

// Info is a session as List shows it.
type Info struct {
	ID      string
	Cwd     string
	Title   string
	Updated time.Time
}

// ListPage is a page of List.
type ListPage struct {
	Sessions []Info
	// NextCursor gets the next page; empty on the last.
	NextCursor string
}

// List returns the stored sessions (and, without a store, the live ones),
// newest first, filtered by cwd when it is not empty. A session live here
// shows its title and time as they are in memory.
func (r *Registry) List(cwd, cursor string) (ListPage, error) {
	if cwd != "" {
		cwd = filepath.Clean(cwd)
	}
	if r.store == nil {
		if cursor != "" {
			return ListPage{}, fmt.Errorf("%w: %q", ErrBadCursor, cursor)
		}
		return r.listLive(cwd), nil
	}
	page, err := r.store.List(store.ListOptions{Cwd: cwd, Cursor: cursor})
	if errors.Is(err, store.ErrBadCursor) {
		return ListPage{}, fmt.Errorf("%w: %q", ErrBadCursor, cursor)
	}
	if err != nil {
		return ListPage{}, fmt.Errorf("list sessions: %w", err)
	}
	out := ListPage{NextCursor: page.NextCursor, Sessions: make([]Info, 0, len(page.Sessions))}
	for _, i := range page.Sessions {
		info := Info{ID: i.ID, Cwd: i.Cwd, Title: i.Title, Updated: i.Updated}
		if s, err := r.Get(i.ID); err == nil {
			if t := s.Title(); t != "" {
				info.Title = t
			}
			if u := s.Updated(); u.After(info.Updated) {
				info.Updated = u
			}
			info.Cwd = s.Cwd
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

func (r *Registry) listLive(cwd string) ListPage {
	r.mu.Lock()
	live := make([]*Session, 0, len(r.byID))
	for _, s := range r.byID {
		live = append(live, s)
	}
	r.mu.Unlock()
	var out ListPage
	for _, s := range live {
		if cwd != "" && s.Cwd != cwd {
			continue
		}
		out.Sessions = append(out.Sessions, Info{ID: s.ID, Cwd: s.Cwd, Title: s.Title(), Updated: s.Updated()})
	}
	sort.Slice(out.Sessions, func(i, j int) bool {
		a, b := out.Sessions[i], out.Sessions[j]
		if !a.Updated.Equal(b.Updated) {
			return a.Updated.After(b.Updated)
		}
		return a.ID < b.ID
	})
	return out
}
