package wire

import (
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"
)

// order is the wire order: what the input filter read, in the order it read
// it, set against what the SDK's handlers do. The SDK handles every request
// on its own goroutine and notifications on another, so without it a
// session/cancel written right after its session/prompt could be handled
// first and lost, and of two back-to-back prompts the older could supersede
// the newer.
//
//   - Each prompt of a known session gets a ticket when read: its place among
//     the session's prompts and its request id. A cancel covers every prompt
//     read before it, begun or not: the filter tells the sessions how many
//     (Sessions.CancelThrough), and the session, which owns its turns, keeps
//     the mark and ends them. The order keeps no cancel of its own.
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
	// replied, if set, is given the result of each reply written (see
	// Wire.Connect); set before the first frame is read.
	replied func(result json.RawMessage)

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
	read    uint64 // prompts read
	transit *Ticket
	waiting []heldPrompt
	closed  bool
	// prompts: request id (idKey) of each prompt read, by ticket, until its
	// reply is known to be written. A turn waits for the replies of the
	// session's earlier prompts before it starts (see Wire.WaitEarlier).
	prompts map[uint64]string
}

// Ticket is a prompt's place in its session's order and its request id.
type Ticket struct {
	// Seq numbers the session's prompts as read: 1, 2, …; 0: none, the
	// prompt did not come through the filter.
	Seq uint64
	id  string
}

type heldPrompt struct {
	Ticket
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
		so = &sessionOrder{prompts: map[uint64]string{}}
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
	tk := Ticket{Seq: so.read, id: id}
	o.dropAnswered(so)
	so.prompts[tk.Seq] = id
	if so.transit != nil {
		so.waiting = append(so.waiting, heldPrompt{Ticket: tk, frame: frame})
		o.held++
		return false
	}
	so.transit = &tk
	o.transit[id] = sid
	return true
}

// cancelRead returns how many of the session's prompts a cancel read now
// covers: every prompt read so far.
func (o *order) cancelRead(sid string) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.session(sid).read
}

// claim is the first thing a prompt handler does: it takes the session's
// ticket in transit (the zero ticket if none: a prompt that did not come
// through the filter) and lets the next held prompt go.
func (o *order) claim(sid string) Ticket {
	o.mu.Lock()
	so := o.sessions[sid]
	if so == nil || so.transit == nil {
		o.mu.Unlock()
		return Ticket{}
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
	so.transit = &next.Ticket
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

// waitEarlier waits, at most replyGrace, until the replies to the
// session's prompts read before ticket seq are written.
func (o *order) waitEarlier(sid string, seq uint64) {
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
	if so.closed && so.transit == nil && len(so.waiting) == 0 {
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
// without running our handler, and the session's next prompt may go. Its
// result is then handed to replied. Every reply is to a request read, so
// with none awaited no frame is decoded.
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
		Result json.RawMessage `json:"result"`
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
	if o.replied != nil {
		o.replied(msg.Result)
	}
}
