// Package sessions is the registry of live sessions: each has an id, a
// working directory, its conversation history, its permission memory, the
// completion notices queued for its next model request, and at most one turn
// in flight. It knows nothing of JSON-RPC.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/instructions"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Sentinel errors, mapped to protocol errors at the protocol edge.
var (
	ErrNotFound   = errors.New("session not found")
	ErrInvalidCwd = errors.New("invalid cwd")
	ErrClosed     = errors.New("session closed")
)

// Causes recorded on a turn's context when it is cancelled, so logs and
// callers can tell why it stopped.
var (
	ErrCancelled  = errors.New("turn cancelled by the client")
	ErrSuperseded = errors.New("turn superseded by a newer prompt")
)

// Mode is a session's permission mode (permission decides what it means).
type Mode = permission.Mode

// The modes, as permission names them.
const (
	ModeAsk     = permission.ModeAsk
	ModeSandbox = permission.ModeSandbox
	ModeAuto    = permission.ModeAuto
)

// Options configure a Registry.
type Options struct {
	// NewID makes session ids; nil means random UUIDs.
	NewID func() string
	// OnClose runs after a session is closed and forgotten (the caller kills
	// its background tasks there); nil means nothing.
	OnClose func(id string)
	// Store persists every session as it happens; nil means sessions live
	// in memory only (--no-persist) and cannot be listed once closed,
	// loaded or resumed.
	Store *store.Store
	// GoneNotice is the notice a loaded session's next model request gets
	// for the tasks that were running when its previous process stopped;
	// nil means a plain default.
	GoneNotice func(taskIDs []string) string
	// Sandbox reports whether ModeSandbox is offered (commands can be
	// confined); it may block the first time, while the kernel is probed.
	// Nil, or false, refuses it (SetMode fails; a stored session in it
	// loads in ModeAsk).
	Sandbox func() bool
	// DefaultMode is the mode a new session starts in; empty means
	// ModeAsk. A mode not offered (ModeSandbox without Sandbox) reads as
	// ModeAsk.
	DefaultMode Mode
	// Logger receives store write failures; nil means none.
	Logger *zap.Logger
}

// Registry holds the sessions of one process. Safe for concurrent use.
type Registry struct {
	newID      func() string
	onClose    func(id string)
	store      *store.Store
	goneNotice func([]string) string
	log        *zap.Logger
	sandbox    func() bool
	defMode    Mode

	// mu guards byID and loading.
	mu   sync.Mutex
	byID map[string]*Session
	// loading holds the ids being read from the store, closed when done: a
	// second load of the same id waits for the first and gets its session.
	loading map[string]chan struct{}
}

// New returns an empty registry.
func New(opts Options) *Registry {
	r := &Registry{newID: opts.NewID, onClose: opts.OnClose, store: opts.Store, goneNotice: opts.GoneNotice, log: opts.Logger,
		sandbox: opts.Sandbox, defMode: opts.DefaultMode,
		byID: map[string]*Session{}, loading: map[string]chan struct{}{}}
	if r.newID == nil {
		r.newID = func() string { return uuid.NewString() }
	}
	if r.sandbox == nil {
		r.sandbox = func() bool { return false }
	}
	if !r.Offers(r.defMode) {
		r.defMode = ModeAsk
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.goneNotice == nil {
		r.goneNotice = func(ids []string) string {
			return "background tasks " + strings.Join(ids, ", ") + " were stopped when dsh-acp restarted"
		}
	}
	return r
}

// Offers reports whether m is a mode sessions can be in here.
func (r *Registry) Offers(m Mode) bool {
	return m == ModeAsk || m == ModeAuto || (m == ModeSandbox && r.sandbox())
}

// Modes lists the modes offered, in the order an editor shows them.
func (r *Registry) Modes() []Mode {
	if r.sandbox() {
		return []Mode{ModeAsk, ModeSandbox, ModeAuto}
	}
	return []Mode{ModeAsk, ModeAuto}
}

// Create validates cwd and the extra project roots (each absolute, an
// existing directory) and registers a new session in the default mode
// (Options.DefaultMode).
func (r *Registry) Create(cwd string, roots []string) (*Session, error) {
	cwd, roots, err := checkDirs(cwd, roots)
	if err != nil {
		return nil, err
	}
	s := r.newSession(r.newID(), cwd)
	s.roots = roots
	if r.store != nil {
		stored, err := r.store.Create(s.ID, cwd)
		if err != nil {
			return nil, fmt.Errorf("store the session (run with --no-persist to keep sessions in memory only): %w", err)
		}
		s.stored = stored
		if s.mode != ModeAsk {
			// A session with no mode stored loads in ModeAsk, whatever
			// the default of the process loading it.
			s.persist(store.Mode{Mode: string(s.mode)})
		}
		if len(roots) > 0 {
			s.persist(store.Roots{Roots: roots})
		}
	}
	s.updated = time.Now()
	r.mu.Lock()
	r.byID[s.ID] = s
	r.mu.Unlock()
	return s, nil
}

func (r *Registry) newSession(id, cwd string) *Session {
	return &Session{
		ID:       id,
		Cwd:      cwd,
		mode:     r.defMode,
		offers:   r.Offers,
		allowed:  map[string]bool{},
		lastDone: closedChan(),
		log:      r.log.With(zap.String("session", id)),
	}
}

// checkDirs checks a request's cwd and extra roots (checkCwd, checkRoots).
func checkDirs(cwd string, roots []string) (string, []string, error) {
	cwd, err := checkCwd(cwd)
	if err != nil {
		return "", nil, err
	}
	roots, err = checkRoots(cwd, roots)
	return cwd, roots, err
}

// checkCwd returns cwd cleaned if it is an absolute, existing directory.
func checkCwd(cwd string) (string, error) {
	if cwd == "" {
		return "", fmt.Errorf("%w: cwd is required", ErrInvalidCwd)
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("%w: cwd must be an absolute path, got %q", ErrInvalidCwd, cwd)
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return "", fmt.Errorf("%w: cwd %s does not exist", ErrInvalidCwd, cwd)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: cwd %s is not a directory", ErrInvalidCwd, cwd)
	}
	return filepath.Clean(cwd), nil
}

// Get finds a live session.
func (r *Registry) Get(id string) (*Session, error) {
	r.mu.Lock()
	s := r.byID[id]
	r.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return s, nil
}

// Live returns the live sessions, in no order.
func (r *Registry) Live() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.byID))
	for _, s := range r.byID {
		out = append(out, s)
	}
	return out
}

// Len returns how many sessions are live.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Close cancels the session's turn, forgets the session, waits for the
// cancelled turn to end and then runs OnClose — so a turn that was about to
// start a background task cannot start it after OnClose killed the
// session's tasks.
func (r *Registry) Close(id string) error {
	r.mu.Lock()
	s := r.byID[id]
	delete(r.byID, id)
	r.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	<-s.close()
	// After the last turn ended, so no call of the session's own tools is
	// still running when they go.
	if x := s.takeTools(); x != nil {
		x.Close()
	}
	if r.onClose != nil {
		r.onClose(id)
	}
	// After the tasks were killed, so their ends are recorded; the session
	// stays in the store and can be loaded again.
	s.closeStore()
	return nil
}

// CloseAll closes every session (program shutdown) and returns when all
// are closed.
func (r *Registry) CloseAll() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	// All at once: each Close waits for its turn to end, which may mean a
	// command's kill grace; one after the other, N sessions would take N
	// graces and an editor does not wait that long.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _ = r.Close(id) })
	}
	wg.Wait()
}

// Notify queues a notice for the session's next model request. Notices for
// sessions that are gone are dropped: nobody will read them.
func (r *Registry) Notify(id, text string) {
	s, err := r.Get(id)
	if err != nil {
		return
	}
	s.queueNotice(text)
}

// Session is one conversation with its own cwd.
type Session struct {
	ID  string
	Cwd string
	// instructions reads the session's AGENTS.md chain before each prompt
	// (it has its own lock).
	instructions instructions.Reader
	// changes is what the session's calls changed, for /undo (it has its
	// own lock).
	changes journal

	// mu guards every field below.
	mu sync.Mutex
	// roots are the extra project roots beside Cwd (see Roots).
	roots   []string
	history []agent.Message
	usage   agent.ContextUsage
	// seqs are the store Seqs of the conversation's messages as a load
	// would rebuild it (0 for the summary); kept only with a store.
	seqs     []int64
	notices  []notice
	mode     Mode
	offers   func(Mode) bool // the registry's Offers
	allowed  map[string]bool
	current  *turn
	lastDone chan struct{}
	closed   bool
	// latest is the newest ticket a turn began with.
	latest Ticket
	// cancelledThrough is the newest ticket a cancel covered: a turn with
	// a ticket up to it begins cancelled (CancelThrough).
	cancelledThrough Ticket
	// persisted state (see persist.go)
	stored *store.Session
	log    *zap.Logger
	title  string
	model  string
	// thinking is the thought level option; empty: the default.
	thinking string
	gone     map[string]bool
	updated  time.Time
	// saveErr is why the last Sync failed; nil when it succeeded.
	saveErr error
	// toldUnsaved: the editor was told the session is not being saved, and
	// not yet that it is again (SaveNews).
	toldUnsaved bool
	// tools is the session's own tool source; nil when it has none.
	tools Tools
	// plan is the session's plan; nil until the model makes one.
	plan *tools.Plan
	// committed is the Seq of the last entry stored when the last turn
	// ended (or when the session was made live): where a fork taken
	// during a turn stops.
	committed int64
}

type turn struct {
	ticket Ticket
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Ticket places a turn in its session's order of prompts: the caller
// numbers prompts 1, 2, … as they arrive. A turn never supersedes one with a
// newer ticket; zero means no place in the order (the turn supersedes
// whatever runs).
type Ticket uint64

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// BeginTurn supersedes any turn in flight: it cancels it, waits until it has
// ended, and returns a context for the new turn plus the func that ends it.
// Turns of one session never overlap. If the new turn is itself superseded
// or cancelled while waiting, the returned context is already done. The end
// func must be called exactly once.
//
// A turn whose ctx is already done, whose ticket a cancel covered
// (CancelThrough), or whose ticket is older than one a turn already began
// with, begins done and leaves the turn in flight alone.
func (s *Session) BeginTurn(ctx context.Context, t Ticket) (context.Context, func(), error) {
	tctx, cancel := context.WithCancelCause(ctx)
	cur := &turn{ticket: t, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(ErrClosed)
		return nil, nil, fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	switch {
	case t != 0 && t <= s.cancelledThrough:
		cancel(ErrCancelled)
	case t != 0 && t < s.latest:
		cancel(ErrSuperseded)
	}
	if tctx.Err() != nil {
		// Stale: never becomes current, so it cannot cancel the newer turn.
		s.mu.Unlock()
		return tctx, func() { cancel(nil) }, nil
	}
	if t > s.latest {
		s.latest = t
	}
	if s.current != nil {
		s.current.cancel(ErrSuperseded)
	}
	prev := s.lastDone
	s.current = cur
	s.lastDone = cur.done
	s.mu.Unlock()

	// The previous turn was cancelled above and ends promptly; waiting for it
	// unconditionally keeps the chain of turns strictly ordered.
	<-prev

	end := func() {
		// What the turn stored is committed now: a fork taken while a
		// later turn runs goes up to here.
		seq := s.storedSeq()
		s.mu.Lock()
		// Compare by identity: a newer turn may already be current.
		if s.current == cur {
			s.current = nil
		}
		s.committed = seq
		s.mu.Unlock()
		cancel(nil)
		close(cur.done)
	}
	return tctx, end, nil
}

// CancelThrough cancels the turns of the prompts with tickets 1 through t:
// the one in flight if its ticket is among them, and any that begins later
// with one of them. The caller numbers the prompts as they arrive and calls
// it in that same order, so a cancel never reaches a prompt sent after it.
// A turn with no ticket (0) is cancelled only by its context, Close or a
// newer turn.
func (s *Session) CancelThrough(t Ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelledThrough = max(s.cancelledThrough, t)
	if s.current != nil && s.current.ticket != 0 && s.current.ticket <= t {
		s.current.cancel(ErrCancelled)
	}
}

// close marks the session closed, cancels its turn and returns a channel
// that is closed when the last turn has ended.
func (s *Session) close() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.current != nil {
		s.current.cancel(ErrClosed)
	}
	return s.lastDone
}

// Tools is a session's own tool source (its MCP servers), owned by the
// session: Registry.Close closes it once the session's last turn ended.
type Tools interface {
	agent.ToolSource
	// Close stops the source and returns when everything it started is gone.
	Close()
}

// SetTools gives the session its own tool source and returns the one it
// replaces (the caller closes that), nil if none. On a closed session it
// fails with ErrClosed and the caller closes t.
func (s *Session) SetTools(t Tools) (Tools, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	prev := s.tools
	s.tools = t
	return prev, nil
}

// Tools returns the session's own tool source; nil when it has none.
func (s *Session) Tools() Tools {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *Session) takeTools() Tools {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tools
	s.tools = nil
	return t
}

// History returns a copy of the conversation so far.
func (s *Session) History() []agent.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Message(nil), s.history...)
}

// Append adds messages to the conversation.
func (s *Session) Append(msgs ...agent.Message) {
	s.mu.Lock()
	s.history = append(s.history, msgs...)
	s.mu.Unlock()
}

// DrainNotices returns the queued notices and clears them.
func (s *Session) DrainNotices() []string {
	s.mu.Lock()
	n := s.notices
	s.notices = nil
	s.mu.Unlock()
	if len(n) == 0 {
		return nil
	}
	texts := make([]string, len(n))
	for i, x := range n {
		texts[i] = x.text
		seq := s.persist(store.Notice{ID: x.id, State: store.NoticeDelivered, Text: x.text})
		if i == 0 {
			// The notices become one message of the conversation.
			s.noteSeq(seq)
		}
	}
	return texts
}

// Mode returns the session's permission mode.
func (s *Session) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetMode changes the permission mode.
func (s *Session) SetMode(m Mode) error {
	if !s.offers(m) {
		return fmt.Errorf("unknown mode %q", m)
	}
	s.mu.Lock()
	changed := s.mode != m
	s.mode = m
	s.mu.Unlock()
	if changed {
		s.persist(store.Mode{Mode: string(m)})
		s.Sync()
	}
	return nil
}

// Remember records command keys the user allowed "always" in this session.
func (s *Session) Remember(keys ...string) {
	var added []string
	s.mu.Lock()
	for _, k := range keys {
		if !s.allowed[k] {
			added = append(added, k)
		}
		s.allowed[k] = true
	}
	s.mu.Unlock()
	for _, k := range added {
		s.persist(store.AlwaysAllow{Key: k})
	}
}

// Remembered returns a copy of the keys allowed "always".
func (s *Session) Remembered() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]bool, len(s.allowed))
	for k := range s.allowed {
		m[k] = true
	}
	return m
}
