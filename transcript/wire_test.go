package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
)

// Directions of a frame.
const (
	toAgent   = "→" // client → agent (written to the binary's stdin)
	fromAgent = "←" // agent → client (read from the binary's stdout)
)

// frame is one line that crossed the wire.
type frame struct {
	dir string
	// raw marks a line a "raw" step wrote past the JSON-RPC client.
	raw  bool
	line []byte
	// val is the decoded line (numbers as json.Number); nil when the line
	// is not JSON, then ok is false.
	val any
	ok  bool
}

func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// wire is the ordered record of every frame in both directions. Each
// direction is recorded in wire order; across directions the order is
// causal (a frame is recorded before it is written, and when it is read,
// before the client acts on it).
type wire struct {
	// mu guards frames and changed.
	mu     sync.Mutex
	frames []frame
	// changed is closed and replaced whenever a frame is added.
	changed chan struct{}
}

func newWire() *wire { return &wire{changed: make(chan struct{})} }

func (w *wire) add(dir string, raw bool, line []byte) {
	f := frame{dir: dir, raw: raw, line: append([]byte(nil), line...)}
	f.val, f.ok = decodeJSON(line)
	w.mu.Lock()
	w.frames = append(w.frames, f)
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *wire) snapshot() ([]frame, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]frame(nil), w.frames...), w.changed
}

// waitFor blocks until cond holds for the frames recorded so far.
func (w *wire) waitFor(ctx context.Context, cond func([]frame) bool) error {
	for {
		frames, changed := w.snapshot()
		if cond(frames) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// teeWriter records every line written to the binary's stdin. Its mutex
// makes each Write (one JSON-RPC frame from the encoder, or one raw line)
// atomic on the pipe and keeps the record in wire order.
type teeWriter struct {
	wire *wire

	// mu guards w, closed and partial.
	mu      sync.Mutex
	w       *os.File
	closed  bool
	partial []byte
}

func (t *teeWriter) Write(p []byte) (int, error) { return t.write(p, false) }

func (t *teeWriter) write(p []byte, raw bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, os.ErrClosed
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.wire.add(toAgent, raw, t.partial[:i])
		t.partial = t.partial[i+1:]
	}
	return t.w.Write(p)
}

// Close closes the binary's stdin. Safe to call more than once.
func (t *teeWriter) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return t.w.Close()
}

// teeReader records every line read from the binary's stdout. Only the
// JSON-RPC connection's read loop calls Read.
type teeReader struct {
	wire    *wire
	r       *os.File
	partial []byte
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.partial = append(t.partial, p[:n]...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.wire.add(fromAgent, false, t.partial[:i])
		t.partial = t.partial[i+1:]
	}
	if errors.Is(err, io.EOF) && len(bytes.TrimSpace(t.partial)) > 0 {
		t.wire.add(fromAgent, false, t.partial)
		t.partial = nil
	}
	return n, err
}

// stdio is the binary's stdin and stdout as the JSON-RPC client's stream.
type stdio struct {
	*teeReader
	*teeWriter
	closeOnce sync.Once
}

func (s *stdio) Close() error {
	s.closeOnce.Do(func() {
		s.teeWriter.Close()
		s.teeReader.r.Close()
	})
	return nil
}
