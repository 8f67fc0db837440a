// Package wire is the connection between the client and the ACP SDK, below
// the handlers: an input filter that answers what the SDK cannot take (and
// would otherwise drop silently or close the connection on), and the wire
// order — prompts and cancels of a session in the order the client wrote
// them, though the SDK hands each request to a goroutine of its own. It
// knows nothing of sessions but what Sessions says, and never of the agent.
package wire

import (
	"bufio"
	"encoding/json"
	"io"
	"time"

	"go.uber.org/zap"
)

// replyGrace bounds how long a finished turn waits for the SDK to write its
// reply before letting the next turn of the session start anyway, and how
// long shutdown waits for the replies owed.
const replyGrace = 5 * time.Second

// Sessions is what the wire needs of the live sessions.
type Sessions interface {
	// Known reports whether sid is a live session: only its prompts and
	// cancels take a place in the order.
	Known(sid string) bool
	// CancelThrough cancels the turns of sid's prompts numbered 1 through
	// n (Ticket.Seq), begun or not, so that one of them beginning later
	// begins cancelled. It must not block: the filter calls it as it reads.
	CancelThrough(sid string, n uint64)
}

// Wire is the connection's filter and order. Make it with New, call Connect
// once, and Close when the connection is done. The prompt handlers use
// Claim, WaitEarlier and AfterReply; a notification handler calls
// NotificationHandled.
type Wire struct {
	log      *zap.Logger
	sessions Sessions
	order    *order
	// slots: one token per notification handed to the SDK and not yet
	// handled (see inbound.passNotification).
	slots chan struct{}

	// Set by Connect.
	stop  chan struct{}
	sdkIn *io.PipeReader
}

// New returns a Wire asking s about sessions; log may be nil.
func New(s Sessions, log *zap.Logger) *Wire {
	if log == nil {
		log = zap.NewNop()
	}
	return &Wire{log: log, sessions: s, order: newOrder(log), slots: make(chan struct{}, notifyWindow)}
}

// Connect puts the wire between the client (in, out) and the SDK: the SDK
// reads sdkIn and writes sdkOut. Once the SDK has written a reply, replied
// (if not nil) is given its result (nil for an error reply); it runs inside
// the SDK's write, so it must not block. Nothing reaches sdkIn before start
// is called: the SDK's reader runs from its constructor, and its logger may
// only be set while that reader has nothing to log about.
func (w *Wire) Connect(in io.Reader, out io.Writer, replied func(result json.RawMessage)) (sdkIn io.Reader, sdkOut io.Writer, start func()) {
	lw := &lockedWriter{w: out, written: w.order.written}
	pr, pw := io.Pipe()
	w.stop = make(chan struct{})
	w.sdkIn = pr
	f := &inbound{w: w, br: bufio.NewReaderSize(in, 64<<10), out: lw, pw: pw, stop: w.stop, slots: w.slots}
	w.order.forward = func(frame []byte) {
		_, _ = pw.Write(append(frame[:len(frame):len(frame)], '\n'))
	}
	w.order.replied = replied
	return pr, lw, func() { go f.run() }
}

// WaitReplies waits, at most a grace, until every request read has been
// answered: a client that writes a request and closes its end at once still
// gets its answer. It reports whether all were.
func (w *Wire) WaitReplies() bool {
	return w.order.waitAll(replyGrace)
}

// Close unblocks the filter and ends the SDK's input, if still open.
func (w *Wire) Close() {
	if w.stop == nil {
		return
	}
	close(w.stop)
	w.sdkIn.Close()
}

// Claim is the first thing a prompt handler of session sid does: it takes
// the ticket of the prompt handed to the SDK (the zero Ticket for a prompt
// that did not come through the filter) and lets the session's next prompt,
// held back until then, go to the SDK.
func (w *Wire) Claim(sid string) Ticket {
	return w.order.claim(sid)
}

// WaitEarlier waits, at most a grace, until the replies to the session's
// prompts read before tk are written. A turn calls it once it has begun
// and before it sends anything: an earlier prompt it superseded before that
// one's handler began answers "cancelled" at once, and the editor must see
// that before this turn's updates.
func (w *Wire) WaitEarlier(sid string, tk Ticket) {
	w.order.waitEarlier(sid, tk.Seq)
}

// AfterReply runs end once the reply to tk's prompt has been written (or
// after a grace); at once for a prompt the filter did not see. A turn ends
// through it so the next turn of its session starts only once this reply is
// on the wire.
func (w *Wire) AfterReply(tk Ticket, end func()) {
	done := w.order.done(tk.id)
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
			w.log.Warn("prompt reply not written in time; starting the next turn anyway", zap.String("request", tk.id))
		}
		end()
	}()
}

// NotificationHandled frees the place in the SDK's queue of a notification
// handed to a handler; a direct call (not a forwarded frame) frees nothing.
func (w *Wire) NotificationHandled() {
	select {
	case <-w.slots:
	default:
	}
}

// Forget drops a closed session's order once nothing of it is pending.
func (w *Wire) Forget(sid string) {
	w.order.forget(sid)
}
