package acp

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/sessions"
)

// replyGrace bounds how long a finished turn waits for the SDK to write its
// reply before letting the next turn of the session start anyway, and how
// long shutdown waits for the replies owed.
const replyGrace = 5 * time.Second

// order is the wire order: what the input filter read, in the order it read
// it, set against what the SDK's handlers do. The SDK handles every request
// on its own goroutine and notifications on another, so without it a
// session/cancel written right after its session/prompt could be handled
// first and lost, and of two back-to-back prompts the older could supersede
// the newer.
//
//   - Each prompt of a known session gets a ticket when read: its place among
//     the session's prompts and its request id. A cancel covers every prompt
//     read before it, begun or not.
//   - The SDK hands a handler nothing of the frame but its params, so the
//     ticket travels out of band: a session has at most one prompt handed to
//     the SDK whose handler has not yet claimed its ticket ("in transit");
//     later prompts of that session are held back until it is claimed (or
//     its reply written, when the SDK rejected it before any handler ran).
//     The frames themselves are forwarded as read, byte for byte.
//   - Every request read owes a reply; replies are recognised by decoding
//     what is written. A superseded turn lets the next one start only once
//     its reply is on the wire, so the editor sees "cancelled" before the new
//     turn's updates; shutdown waits for them all.
type order struct {
	log *zap.Logger
	// forward hands a held-back prompt frame to the SDK; set before the
	// first frame is read.
	forward func(frame []byte)

	// mu guards the fields below.
	mu       sync.Mutex
	sessions map[string]*sessionOrder
	// awaited: request id (idKey) → closed once its reply was written.
	awaited map[string]chan struct{}
	// transit: request id of a prompt in transit → its session.
	transit map[string]string
	// held counts frames held back or being forwarded; changed is closed
	// and replaced whenever it drops.
	held    int
	changed chan struct{}
}

type sessionOrder struct {
	read             uint64 // prompts read
	cancelledThrough uint64 // the last prompt a cancel covered
	// live: turns begun and not ended, by ticket; a cancel ends them.
	live    map[sessions.Ticket]context.CancelCauseFunc
	transit *ticket
	waiting []heldPrompt
	closed  bool
	// prompts: request id (idKey) of each prompt read, by ticket, until its
	// reply is known to be written. A turn waits for the replies of the
	// session's earlier prompts before it starts (see beginTurn).
	prompts map[sessions.Ticket]string
}

// ticket is a prompt's place in its session's order (1, 2, …; 0: none, the
// prompt did not come through the filter) and its request id.
type ticket struct {
	seq sessions.Ticket
	id  string
}

type heldPrompt struct {
	ticket
	frame []byte
}

func newOrder(log *zap.Logger) *order {
	return &order{
		log:      log,
		sessions: map[string]*sessionOrder{},
		awaited:  map[string]chan struct{}{},
		transit:  map[string]string{},
		changed:  make(chan struct{}),
	}
}

func (o *order) session(sid string) *sessionOrder {
	so := o.sessions[sid]
	if so == nil {
		so = &sessionOrder{live: map[sessions.Ticket]context.CancelCauseFunc{}, prompts: map[sessions.Ticket]string{}}
		o.sessions[sid] = so
	}
	return so
}

// promptRead records a prompt of a known session as read, with request id
// key id. It reports whether frame may be forwarded now; if not, order
// forwards it itself once the session's prompt in transit is claimed.
func (o *order) promptRead(sid, id string, frame []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	so := o.session(sid)
	so.read++
	tk := ticket{seq: sessions.Ticket(so.read), id: id}
	o.dropAnswered(so)
	so.prompts[tk.seq] = id
	if so.transit != nil {
		so.waiting = append(so.waiting, heldPrompt{ticket: tk, frame: frame})
		o.held++
		return false
	}
	so.transit = &tk
	o.transit[id] = sid
	return true
}

// cancelRead records a cancel of a known session as read: it covers every
// prompt read so far, and ends the turns that began.
func (o *order) cancelRead(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	so := o.session(sid)
	so.cancelledThrough = so.read
	for _, cancel := range so.live {
		cancel(sessions.ErrCancelled)
	}
}

// claim is the first thing a prompt handler does: it takes the session's
// ticket in transit (the zero ticket if none: a prompt that did not come
// through the filter) and lets the next held prompt go.
func (o *order) claim(sid string) ticket {
	o.mu.Lock()
	so := o.sessions[sid]
	if so == nil || so.transit == nil {
		o.mu.Unlock()
		return ticket{}
	}
	tk := *so.transit
	delete(o.transit, tk.id)
	next := o.advance(sid, so)
	o.mu.Unlock()
	o.send(next)
	return tk
}

// advance puts the session's next held prompt in transit and returns its
// frame (nil if none). Called with mu held.
func (o *order) advance(sid string, so *sessionOrder) []byte {
	so.transit = nil
	if len(so.waiting) == 0 {
		o.tidy(sid, so)
		return nil
	}
	next := so.waiting[0]
	so.waiting = so.waiting[1:]
	so.transit = &next.ticket
	o.transit[next.id] = sid
	return next.frame
}

// send forwards a released frame off the caller's goroutine: the caller may
// be a handler or the output writer, neither of which should wait for the
// SDK to read a large frame. held drops once the frame is written.
func (o *order) send(frame []byte) {
	if frame == nil {
		return
	}
	go func() {
		o.forward(frame)
		o.mu.Lock()
		o.held--
		close(o.changed)
		o.changed = make(chan struct{})
		o.mu.Unlock()
	}()
}

// waitHeld waits until no frame is held back, or timeout: at end of input
// the filter closes the SDK's input only once every frame read reached it.
func (o *order) waitHeld(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		o.mu.Lock()
		n, ch := o.held, o.changed
		o.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}

// beginTurn begins the turn of a prompt with ticket tk on s: already
// cancelled if a cancel read after the prompt covers it, superseded if a
// newer prompt of the session began (see sessions.Ticket); otherwise it is
// live until end, and a cancel read meanwhile ends it.
func (o *order) beginTurn(ctx context.Context, s *sessions.Session, tk ticket) (context.Context, func(), error) {
	parent, cancel := context.WithCancelCause(ctx)
	o.mu.Lock()
	so := o.sessions[s.ID]
	switch {
	case tk.seq == 0 || so == nil:
	case uint64(tk.seq) <= so.cancelledThrough:
		cancel(sessions.ErrCancelled)
	default:
		so.live[tk.seq] = cancel
	}
	o.mu.Unlock()
	tctx, end, err := s.BeginTurn(parent, tk.seq)
	if err != nil {
		o.ended(s.ID, tk.seq)
		cancel(nil)
		return nil, nil, err
	}
	if tctx.Err() == nil {
		// An earlier prompt whose handler had not begun its turn when this
		// one superseded it answers "cancelled" at once; the editor must see
		// that before this turn's updates.
		o.waitEarlier(s.ID, tk.seq)
	}
	return tctx, func() {
		o.ended(s.ID, tk.seq)
		end()
		cancel(nil)
	}, nil
}

// waitEarlier waits, at most replyGrace, until the replies to the
// session's prompts read before ticket seq are written.
func (o *order) waitEarlier(sid string, seq sessions.Ticket) {
	if seq == 0 {
		return
	}
	o.mu.Lock()
	var owed []chan struct{}
	if so := o.sessions[sid]; so != nil {
		o.dropAnswered(so)
		for t, id := range so.prompts {
			if t < seq {
				owed = append(owed, o.awaited[id])
			}
		}
	}
	o.mu.Unlock()
	if len(owed) == 0 {
		return
	}
	timer := time.NewTimer(replyGrace)
	defer timer.Stop()
	for _, ch := range owed {
		select {
		case <-ch:
		case <-timer.C:
			o.log.Warn("an earlier prompt's reply was not written in time; starting the turn anyway", zap.String("session", sid))
			return
		}
	}
}

// dropAnswered forgets the prompts whose replies were written. Called with
// mu held.
func (o *order) dropAnswered(so *sessionOrder) {
	for t, id := range so.prompts {
		if _, owed := o.awaited[id]; !owed {
			delete(so.prompts, t)
		}
	}
}

func (o *order) ended(sid string, seq sessions.Ticket) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if so := o.sessions[sid]; so != nil && seq != 0 {
		delete(so.live, seq)
		o.tidy(sid, so)
	}
}

// forget drops a closed session's order once nothing of it is pending.
func (o *order) forget(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if so := o.sessions[sid]; so != nil {
		so.closed = true
		o.tidy(sid, so)
	}
}

// tidy deletes a closed session with nothing pending. Called with mu held.
func (o *order) tidy(sid string, so *sessionOrder) {
	if so.closed && so.transit == nil && len(so.waiting) == 0 && len(so.live) == 0 {
		delete(o.sessions, sid)
	}
}

// expect records that a reply to request id (an idKey) is owed.
func (o *order) expect(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.awaited[id]; !dup {
		o.awaited[id] = make(chan struct{})
	}
}

// done returns a channel closed once the reply to id was written; nil when
// id is not awaited.
func (o *order) done(id string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.awaited[id]
}

// waitAll waits until every awaited reply was written, or timeout.
func (o *order) waitAll(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		o.mu.Lock()
		var ch chan struct{}
		for _, c := range o.awaited {
			ch = c
			break
		}
		o.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}

// written looks at a frame the agent wrote. A reply (an id and no method,
// whatever the order of its members) releases the waiters of its request;
// if that request was a prompt still in transit, the SDK answered it
// without running our handler, and the session's next prompt may go.
func (o *order) written(frame []byte) {
	o.mu.Lock()
	idle := len(o.awaited) == 0
	o.mu.Unlock()
	if idle {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(frame, &msg) != nil || msg.Method != nil || !validID(msg.ID) {
		return
	}
	key := idKey(msg.ID)
	o.mu.Lock()
	if ch, ok := o.awaited[key]; ok {
		close(ch)
		delete(o.awaited, key)
	}
	var next []byte
	if sid, ok := o.transit[key]; ok {
		delete(o.transit, key)
		if so := o.sessions[sid]; so != nil && so.transit != nil && so.transit.id == key {
			next = o.advance(sid, so)
		}
	}
	o.mu.Unlock()
	o.send(next)
}

// afterReply runs end once the reply to request id has been written (or
// after replyGrace); at once for a prompt the filter did not see.
func (a *Agent) afterReply(id string, end func()) {
	done := a.order.done(id)
	if done == nil {
		end()
		return
	}
	go func() {
		t := time.NewTimer(replyGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			a.log.Warn("prompt reply not written in time; starting the next turn anyway", zap.String("request", id))
		}
		end()
	}()
}

// validID reports whether raw is an id JSON-RPC allows in a request: a
// string, a number or null. Anything else (an array, an object, a boolean)
// is an invalid request.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"', c == 'n', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// idKey is a valid request id as the reply to it will carry it: the SDK
// echoes the id's bytes, but re-encoded (a string may come back with "<"
// written as \u003c, "/" unescaped), so strings are keyed by their value
// and numbers by their text.
func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(raw)
}
