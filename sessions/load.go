package sessions

import (
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// More sentinels of the stored sessions.
var (
	// ErrBusy: the session is live in another dsh-acp process. The
	// registry's error is a BusyError, one sentence that names the session.
	ErrBusy = errors.New("session is live in another dsh-acp process")
	// ErrUnusable: the session's file was written by a newer dsh-acp or is
	// not a dsh-acp file.
	ErrUnusable = errors.New("session file is not usable by this dsh-acp")
	// ErrBadCursor: a list cursor this registry did not make.
	ErrBadCursor = errors.New("malformed list cursor")
)

// Loaded is a session made live by Open.
type Loaded struct {
	Session *Session
	// Replay ranges over the session's conversation as the editor saw it:
	// read back from its store as it is ranged, the log streaming by (a log
	// is never held whole beside the history rebuilt from it), also when
	// the session was live here already (a client reopening a thread it
	// never closed shows it whole).
	Replay iter.Seq[Replayed]
	// WasLive: the session was live in this process already and is
	// returned as is.
	WasLive bool
}

// Open makes a stored session live with cwd as its working directory and
// roots as its extra project roots, or returns it if it is live here
// already (with roots as its roots from now on: the request's list is the
// whole of them). Its history, mode, model, always
// allow memory and undelivered notices are restored; the tasks that were
// running when its process stopped are marked gone, and its next model
// request is told so once.
func (r *Registry) Open(id, cwd string, roots []string) (Loaded, error) {
	cwd, roots, err := checkDirs(cwd, roots)
	if err != nil {
		return Loaded{}, err
	}
	for {
		r.mu.Lock()
		if s := r.byID[id]; s != nil {
			r.mu.Unlock()
			s.setRoots(roots)
			return Loaded{Session: s, Replay: s.replay(), WasLive: true}, nil
		}
		wait := r.loading[id]
		if wait == nil {
			done := make(chan struct{})
			r.loading[id] = done
			r.mu.Unlock()
			l, err := r.open(id, cwd, roots)
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

func (r *Registry) open(id, cwd string, roots []string) (Loaded, error) {
	stored, err := r.reopen(id, cwd, roots)
	if err != nil {
		return Loaded{}, err
	}
	state := stored.State()
	s := r.newSession(id, cwd)
	s.roots = roots
	s.stored = stored
	if err := s.rebuild(state.Compaction); err != nil {
		stored.Close()
		return Loaded{}, fmt.Errorf("read stored session %s: %w", id, err)
	}
	s.restore(state, r.Offers)
	s.committed = stored.Seq()
	if len(state.RunningTasks) > 0 {
		// Reopen recorded them gone.
		s.queueNotice(r.goneNotice(state.RunningTasks))
	}
	s.Sync()
	return Loaded{Session: s, Replay: s.replay()}, nil
}

// BusyError: the session ID is live in another dsh-acp process. It says
// so in one sentence (wrapping ErrBusy's words would say it twice), and is
// ErrBusy.
type BusyError struct {
	ID string
	// Sentence, when set, is the whole message, in place of the default
	// "… is live in another dsh-acp process …; close it there first".
	Sentence string
}

func (e BusyError) Error() string {
	if e.Sentence != "" {
		return e.Sentence
	}
	return "session " + e.ID + " is live in another dsh-acp process (another editor window?); close it there first"
}

// Is makes a BusyError ErrBusy.
func (e BusyError) Is(target error) bool { return target == ErrBusy }

// reopen opens the stored session id to go on in cwd, its errors those of
// the registry.
func (r *Registry) reopen(id, cwd string, roots []string) (*store.Session, error) {
	if r.store == nil {
		return nil, fmt.Errorf("%w: %s (sessions are not stored: --no-persist)", ErrNotFound, id)
	}
	stored, err := r.store.Reopen(id, cwd, roots)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadID):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case errors.Is(err, store.ErrLocked):
		return nil, BusyError{ID: id}
	case errors.Is(err, store.ErrForeign), errors.Is(err, store.ErrNewerVersion):
		return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, id, err)
	case err != nil:
		return nil, fmt.Errorf("open stored session %s: %w", id, err)
	}
	return stored, nil
}

// rebuild reads back, in one pass over the stored log, all that the live
// session keeps of it: the history (from compaction on, if any), the plan
// and the tasks it started. The replay reads the log again.
func (s *Session) rebuild(compaction *store.Compaction) error {
	h := newHistory(compaction, imageLoader(s.stored, s.log))
	s.gone = map[string]bool{}
	var gc collector
	err := s.stored.Scan(func(e store.Entry) bool {
		gc.streamed(len(e.Data))
		h.add(e)
		switch e.Kind {
		case store.KindPlan:
			if p, err := e.Decode(); err == nil {
				s.plan = PlanOf(p.(store.Plan))
			}
		case store.KindTaskStarted:
			if p, err := e.Decode(); err == nil {
				s.gone[p.(store.TaskStarted).ID] = true
			}
		case store.KindChanges:
			if p, err := e.Decode(); err == nil {
				s.changes.replayChanges(p.(store.Changes))
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	s.history, s.seqs = h.done()
	// Only the images a request may still carry are kept (one for one:
	// seqs stay aligned).
	s.history = agent.BoundImages(s.history)
	return nil
}

// restore takes the session's settings from its stored state; offers says
// which modes this process offers.
func (s *Session) restore(state store.State, offers func(Mode) bool) {
	s.title = state.Title
	// A stored mode this process does not offer (the sandbox is off now)
	// falls back to asking, never to running unconfined unasked.
	s.mode = ModeAsk
	if m := Mode(state.Mode); offers(m) {
		s.mode = m
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
}

// collectEvery is how many bytes of a log stream by between two forced
// collections while a session loads.
const collectEvery = 2 << 20

// collector forces a garbage collection each time another collectEvery
// bytes of a log have streamed by. Rebuilding a history makes garbage a few
// times the bytes it reads (each entry's raw line, its payload decoded), a
// replay about twenty times (the ACP SDK marshals each notification, turns
// it into a map and marshals it again, at each level of its unions), while
// the history rebuilt, about the log's size, stays live: left to the pacer
// (GOGC=100) the heap grows to twice what is live before it is collected,
// so a 300 MB log would peak over 600 MB. A collection every 2 MB bounds
// that garbage to some 40 MB, and costs little: what is live is mostly
// strings, which the collector does not scan (a few milliseconds each with
// 300 MB live). Logs under 2 MB never force one.
type collector struct{ n int }

func (c *collector) streamed(n int) {
	c.n += n
	if c.n >= collectEvery {
		c.n = 0
		runtime.GC()
	}
}

// abortedText answers, in a rebuilt history, a tool call whose result was
// never stored (the process died mid-call): the API needs an answer for
// every call, and this is what the agent says of a call it stopped.
const abortedText = "Error: command aborted"

// imageLoader reads a prompt's or tool result's images back from beside
// the session's log. An image that cannot be read is left out and logged:
// the conversation still loads.
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

// historyBuilder rebuilds a history from entries given one at a time, in
// order, so that a log can be rebuilt from as it streams by.
type historyBuilder struct {
	compaction *store.Compaction
	images     func([]store.Image) []agent.Image
	// prefix stands for the part of the history a compaction replaced (its
	// summary, then the prompt it kept word for word, if any); body is the
	// history after it.
	prefix, body         []agent.Message
	prefixSeqs, bodySeqs []int64
	// keptPrompt: the entry of the compaction's kept prompt was met.
	keptPrompt bool
	// The calls of the last assistant message, and those answered.
	open     []string
	answered map[string]bool
	// notices delivered in a row, sent as one user message.
	notices   []string
	noticeSeq int64
}

func newHistory(c *store.Compaction, images func([]store.Image) []agent.Image) *historyBuilder {
	h := &historyBuilder{compaction: c, images: images, answered: map[string]bool{}}
	if c != nil {
		h.prefix = []agent.Message{agent.SummaryMessage(c.Summary)}
		h.prefixSeqs = []int64{0}
	}
	return h
}

// add takes the next entry of the log.
func (h *historyBuilder) add(e store.Entry) {
	if h.beforeKept(e) {
		return
	}
	p, err := e.Decode()
	if err != nil {
		return
	}
	switch v := p.(type) {
	case store.Prompt:
		h.prompt(e.Seq, v)
	case store.Notice:
		h.notice(e.Seq, v)
	case store.Assistant:
		h.assistant(e.Seq, v)
	case store.ToolResult:
		h.endNotices()
		h.answered[v.CallID] = true
		m := agent.Message{Role: agent.RoleTool, ToolCallID: v.CallID, Content: v.Text}
		m.Images = h.imagesOf(v.Images)
		h.push(e.Seq, m)
	}
}

// beforeKept applies to e what the last compaction means (the prompt it
// kept word for word; with nothing kept, all that came before its entry
// dropped) and reports whether e lies before what the compaction kept.
func (h *historyBuilder) beforeKept(e store.Entry) bool {
	c := h.compaction
	if c == nil {
		return false
	}
	if c.PromptSeq != 0 && e.Seq == c.PromptSeq && !h.keptPrompt {
		h.keptPrompt = true
		if p, err := e.Decode(); err == nil && e.Kind == store.KindPrompt {
			v := p.(store.Prompt)
			m := agent.Message{Role: agent.RoleUser, Content: v.Text}
			m.Images = h.imagesOf(v.Images)
			h.prefix = append(h.prefix, m)
			h.prefixSeqs = append(h.prefixSeqs, e.Seq)
		}
	}
	if c.KeptFromSeq == 0 && e.Kind == store.KindCompaction {
		// None kept: the history goes on after the last compaction
		// entry, and what came before it is dropped.
		h.body, h.bodySeqs, h.open, h.notices = nil, nil, nil, nil
		h.answered = map[string]bool{}
		return true
	}
	return e.Seq < c.KeptFromSeq
}

func (h *historyBuilder) prompt(seq int64, v store.Prompt) {
	h.closeCalls()
	h.endNotices()
	h.push(seq, agent.Message{Role: agent.RoleUser, Content: v.Text, Images: h.imagesOf(v.Images)})
}

// imagesOf reads refs back (nil with no loader or no refs).
func (h *historyBuilder) imagesOf(refs []store.Image) []agent.Image {
	if h.images == nil || len(refs) == 0 {
		return nil
	}
	return h.images(refs)
}

// notice gathers the notices delivered in a row into one message.
func (h *historyBuilder) notice(seq int64, v store.Notice) {
	if v.State != store.NoticeDelivered {
		return
	}
	h.closeCalls()
	if len(h.notices) == 0 {
		h.noticeSeq = seq
	}
	h.notices = append(h.notices, v.Text)
}

func (h *historyBuilder) assistant(seq int64, v store.Assistant) {
	h.closeCalls()
	h.endNotices()
	m := agent.Message{Role: agent.RoleAssistant, Content: v.Text, ReasoningContent: v.Reasoning, ReasoningField: v.ReasoningField}
	for _, c := range v.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		h.open = append(h.open, c.ID)
	}
	h.push(seq, m)
}

func (h *historyBuilder) push(seq int64, m agent.Message) {
	h.body = append(h.body, m)
	h.bodySeqs = append(h.bodySeqs, seq)
}

// closeCalls answers the open calls never answered.
func (h *historyBuilder) closeCalls() {
	for _, id := range h.open {
		if !h.answered[id] {
			h.push(0, agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: abortedText})
		}
	}
	h.open = nil
}

func (h *historyBuilder) endNotices() {
	if len(h.notices) > 0 {
		h.push(h.noticeSeq, agent.Message{Role: agent.RoleUser, Content: strings.Join(h.notices, "\n")})
		h.notices = nil
	}
}

// done returns the history and the Seqs of its messages.
func (h *historyBuilder) done() ([]agent.Message, []int64) {
	h.closeCalls()
	h.endNotices()
	if len(h.prefix) == 0 {
		return h.body, h.bodySeqs
	}
	return append(h.prefix, h.body...), append(h.prefixSeqs, h.bodySeqs...)
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
		return BusyError{ID: id}
	}
	return fmt.Errorf("delete session %s: %w", id, err)
}

// Info is a session as List shows it.
type Info struct {
	ID  string
	Cwd string
	// Roots are the extra project roots stored with the session.
	Roots   []string
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
		info := Info{ID: i.ID, Cwd: i.Cwd, Roots: i.Roots, Title: i.Title, Updated: i.Updated}
		if s, err := r.Get(i.ID); err == nil {
			if t := s.Title(); t != "" {
				info.Title = t
			}
			if u := s.Updated(); u.After(info.Updated) {
				info.Updated = u
			}
			info.Cwd = s.Cwd
			info.Roots = s.Roots()
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

func (r *Registry) listLive(cwd string) ListPage {
	var out ListPage
	for _, s := range r.Live() {
		if cwd != "" && s.Cwd != cwd {
			continue
		}
		out.Sessions = append(out.Sessions, Info{ID: s.ID, Cwd: s.Cwd, Roots: s.Roots(), Title: s.Title(), Updated: s.Updated()})
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
