package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// The SDK reads frames with a bufio.Scanner whose buffer may grow to 10 MiB
// and must hold the newline too: a longer line ends the connection (every
// session with it). So the longest frame forwarded is one byte shorter.
const (
	sdkLineBuffer = 10 << 20
	// MaxFrame is the longest frame, in bytes, passed to the SDK.
	MaxFrame = sdkLineBuffer - 1
	// keepFrame is how much of a line is kept: a frame just over the limit
	// is still decoded whole (to answer it with its id); of a longer one
	// only the beginning is kept, to look for its id.
	keepFrame = MaxFrame + 1
)

// The SDK queues notifications in a channel of 1,024 and closes the
// connection when it is full (connection.go, receive). notifyWindow bounds
// the notifications handed to it and not yet handled, well below that.
const notifyWindow = 256

// lockedWriter makes each Write atomic, so frames written by the SDK and
// error replies written by the input filter never interleave on stdout.
// Every frame the SDK writes is shown to written (if set) once its Write
// returned.
type lockedWriter struct {
	written func(frame []byte)

	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	_, err := l.reply(scoped(p))
	// The SDK wrote all of p, as far as it is concerned.
	n := len(p)
	if err != nil {
		n = 0
	}
	if l.written != nil {
		l.written(p)
	}
	return n, err
}

// reply writes a frame of the filter's own: it answers a frame the SDK never
// saw, so it releases nobody's waiters.
func (l *lockedWriter) reply(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// inbound is the input filter between the client and the SDK. It decodes
// every frame once and passes on, byte for byte, only frames the SDK can
// take without closing the connection; it answers the rest itself (the SDK
// would log and drop a line that is not JSON, where JSON-RPC 2.0 requires a
// Parse error or Invalid Request reply), drops the notifications the agent
// ignores, and records prompts and cancels in the wire order (order).
//
// Frames that arrived together (already buffered) are all recorded before
// any is passed on: a session/cancel written right behind its
// session/prompt is then known before that prompt's turn can run, even a
// turn short enough to finish before this goroutine got to the next line.
type inbound struct {
	w    *Wire
	br   *bufio.Reader
	out  *lockedWriter
	pw   *io.PipeWriter
	stop <-chan struct{}
	// slots holds one token per notification handed to the SDK and not
	// yet handled (NotificationHandled takes it back).
	slots chan struct{}

	batch []byte
}

func (f *inbound) run() {
	for {
		f.batch = f.batch[:0]
		var err error
		for first := true; first || (err == nil && bufferedLine(f.br)); first = false {
			var line []byte
			var size int
			line, size, err = readLine(f.br)
			if len(bytes.TrimSpace(line)) > 0 {
				f.handle(line, size)
			}
		}
		if !f.flush() {
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				f.w.log.Warn("reading stdin failed", zap.Error(err))
			}
			// Prompts held back for their turn in the order still reach
			// the SDK before its input ends.
			if !f.w.order.waitHeld(replyGrace) {
				f.w.log.Warn("input ended with prompts still held back")
			}
			f.pw.Close()
			return
		}
	}
}

func (f *inbound) flush() bool {
	if len(f.batch) == 0 {
		return true
	}
	_, err := f.pw.Write(f.batch)
	f.batch = f.batch[:0]
	return err == nil
}

func (f *inbound) pass(line []byte) {
	f.batch = append(append(f.batch, line...), '\n')
}

func (f *inbound) reject(line []byte, r *rejection) {
	f.w.log.Warn("rejected malformed frame", zap.Int("bytes", len(line)), zap.Int("code", r.code), zap.String("reason", r.msg))
	_, _ = f.out.reply(errorFrame(r.id, r.code, r.msg))
}

// handle routes one frame; size is its length, of which line may hold only
// the beginning.
func (f *inbound) handle(line []byte, size int) {
	if size > len(line) {
		f.reject(line, &rejection{id: readID(line), code: -32600, msg: tooLarge(size)})
		return
	}
	h, r := decodeHeader(line)
	if r != nil {
		f.reject(line, r)
		return
	}
	fits := len(line) <= MaxFrame
	switch {
	case h.Method == nil: // a response to one of our requests
		if !fits {
			f.w.log.Warn("dropped a response too large for the SDK", zap.Int("bytes", size), zap.ByteString("id", h.ID))
			return
		}
		f.pass(line)
	case h.isNotification():
		f.notification(&h, line, fits)
	case !fits:
		f.reject(line, &rejection{id: h.ID, code: -32600, msg: tooLarge(size)})
	default:
		f.request(&h, line)
	}
}

func tooLarge(size int) string {
	return fmt.Sprintf("Invalid Request: a frame of %d bytes is over the limit of %d bytes", size, MaxFrame)
}

func (f *inbound) request(h *header, line []byte) {
	if *h.Method == acpsdk.AgentMethodSessionList {
		line = withEmptyParams(line)
	}
	id := idKey(h.ID)
	f.w.order.expect(id)
	if *h.Method == acpsdk.AgentMethodSessionPrompt {
		if sid, ok := h.sessionID(); ok && f.w.sessions.Known(sid) && !f.w.order.promptRead(sid, id, line) {
			return // held back; order forwards it in its turn
		}
	}
	f.pass(line)
}

// notification passes on only what the SDK acts on: a cancel of a known
// session (applied here, in wire order, to the prompts read before it; the
// SDK's handler only logs) and
// $/cancel_request (handled by the SDK as it reads, outside its queue).
// Everything else — extension (_-prefixed) and unknown notifications, a
// request method sent without an id, a cancel of an unknown session — the
// agent ignores, so it never takes a place in the SDK's queue.
func (f *inbound) notification(h *header, line []byte, fits bool) {
	method := *h.Method
	switch method {
	case acpsdk.AgentMethodSessionCancel:
		sid, ok := h.sessionID()
		if !ok || !f.w.sessions.Known(sid) {
			f.w.log.Debug("ignoring a cancel of an unknown session", zap.String("session", sid))
			return
		}
		f.w.sessions.CancelThrough(sid, f.w.order.cancelRead(sid))
		// The SDK calls the Cancel handler (which frees the slot) only for params it
		// decodes; otherwise it would log and drop the frame.
		if fits && sdkDecodesCancel(line) {
			f.passNotification(line)
		}
	case "$/cancel_request":
		if fits {
			f.pass(line)
		}
	default:
		if !strings.HasPrefix(method, "_") {
			f.w.log.Debug("ignoring notification", zap.String("method", method))
		}
	}
}

// passNotification passes on a notification once a slot in the SDK's queue
// is free. When none is, what was batched goes first (so the SDK can free
// slots) and the filter stops reading until one is: back-pressure to the
// client instead of overflowing the SDK's queue.
func (f *inbound) passNotification(line []byte) {
	select {
	case f.slots <- struct{}{}:
	default:
		if !f.flush() {
			return
		}
		select {
		case f.slots <- struct{}{}:
		case <-f.stop:
			return
		}
	}
	f.pass(line)
}

func sdkDecodesCancel(line []byte) bool {
	var m struct {
		Params acpsdk.CancelNotification `json:"params"`
	}
	return json.Unmarshal(line, &m) == nil
}

// bufferedLine reports whether a whole line is already buffered, so reading
// it cannot block.
func bufferedLine(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// readLine reads one line and returns it without its line ending, and its
// size. Of a line over keepFrame only the first keepFrame bytes are kept
// (the rest is read and dropped), so size > len(line) says it was cut.
func readLine(br *bufio.Reader) (line []byte, size int, err error) {
	for {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		size += len(chunk)
		if room := keepFrame + 2 - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	whole := len(line) == size
	if err == nil { // the chunk ended with the newline
		size--
		if whole {
			line = line[:len(line)-1]
		}
	}
	if whole && len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
		size--
	}
	if len(line) > keepFrame {
		line = line[:keepFrame]
	}
	return line, size, err
}
