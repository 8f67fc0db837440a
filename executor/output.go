package executor

import (
	"errors"
	"os"
	"sync"
	"unicode/utf8"

	"go.uber.org/zap"
)

// ring keeps the last max bytes written to it. Its buffer grows on demand so
// a task that prints a line does not pin max bytes.
type ring struct {
	buf   []byte
	max   int
	start int
	n     int
}

// write appends p and reports how many of the oldest bytes were overwritten.
func (r *ring) write(p []byte) (overwritten int) {
	if r.max <= 0 || len(p) == 0 {
		return len(p)
	}
	if len(p) >= r.max {
		overwritten = r.n + len(p) - r.max
		if len(r.buf) < r.max {
			r.buf = make([]byte, r.max)
		}
		copy(r.buf, p[len(p)-r.max:])
		r.start, r.n = 0, r.max
		return overwritten
	}
	if need := r.n + len(p); need > len(r.buf) && len(r.buf) < r.max {
		size := max(2*len(r.buf), need, 512)
		r.grow(min(size, r.max))
	}
	if free := len(r.buf) - r.n; len(p) > free {
		overwritten = len(p) - free
	}
	// Write at the logical end, wrapping; the overwritten prefix moves start.
	end := (r.start + r.n) % len(r.buf)
	k := copy(r.buf[end:], p)
	copy(r.buf, p[k:])
	r.n += len(p) - overwritten
	r.start = (r.start + overwritten) % len(r.buf)
	return overwritten
}

func (r *ring) grow(size int) {
	nb := make([]byte, size)
	r.copyTo(nb)
	r.buf, r.start = nb, 0
}

// copyTo copies the held bytes, oldest first, into dst (len(dst) >= r.n).
func (r *ring) copyTo(dst []byte) {
	if r.n == 0 {
		return
	}
	k := copy(dst[:r.n], r.buf[r.start:min(r.start+r.n, len(r.buf))])
	copy(dst[k:r.n], r.buf[:r.n-k])
}

func (r *ring) bytes() []byte {
	out := make([]byte, r.n)
	r.copyTo(out)
	return out
}

func (r *ring) reset() { r.start, r.n = 0, 0 }

// skipPartialRune returns how many leading bytes of b are the continuation
// of a rune whose start was cut off. At most utf8.UTFMax-1 bytes are skipped:
// beyond that the text is not UTF-8 and there is no boundary to find.
func skipPartialRune(b []byte) int {
	i := 0
	for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// incompleteSuffix returns how many trailing bytes of b are the beginning of
// a rune whose remaining bytes have not arrived yet.
func incompleteSuffix(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if c < utf8.RuneSelf {
			return 0
		}
		if !utf8.FullRune(b[len(b)-i:]) {
			return i
		}
		return 0
	}
	return 0
}

// spillOpener creates a fresh spill file.
type spillOpener func(label string) (*os.File, error)

// capture is the io.Writer a stream's reader feeds. Write never fails and
// never blocks on anything but a page-cache write: the child must not stall
// on a full pipe because of us.
type capture struct {
	label   string
	open    spillOpener
	logger  *zap.Logger
	observe func(p []byte, spill string)

	// mu guards everything below.
	mu sync.Mutex
	// tail holds the whole stream until it overflows, then its last bytes.
	tail  ring
	total int64
	// overflowed: total exceeded tail.max; from then on every byte goes to
	// spill (when it could be opened and written).
	overflowed bool
	spill      *os.File
	spillPath  string
	// unread is the background reader's queue; nil for foreground runs.
	unread  *ring
	dropped int64
	closed  bool
}

func newCapture(label string, tailBytes, unreadBytes int, open spillOpener, logger *zap.Logger, observe func(p []byte, spill string)) *capture {
	c := &capture{label: label, open: open, logger: logger, observe: observe, tail: ring{max: tailBytes}}
	if unreadBytes > 0 {
		c.unread = &ring{max: unreadBytes}
	}
	return c
}

// Write always reports len(p), nil.
func (c *capture) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return len(p), nil
	}
	c.total += int64(len(p))
	if !c.overflowed && c.total > int64(c.tail.max) {
		c.overflowed = true
		c.startSpill()
	}
	if c.spill != nil {
		if _, err := c.spill.Write(p); err != nil {
			c.abandonSpill(err)
		}
	}
	c.tail.write(p)
	background := c.unread != nil
	if background {
		c.dropped += int64(c.unread.write(p))
	}
	spill, total := c.spillPath, c.total
	c.mu.Unlock()
	if c.observe != nil {
		c.observe(p, spill)
	}
	if background {
		// Once this is logged a Read returns these bytes: the event the
		// golden transcripts' commands wait on before the next bash_output
		// (nothing else says when a line the task wrote reached us).
		if ce := c.logger.Check(zap.DebugLevel, "background task output read"); ce != nil {
			ce.Write(zap.String("stream", c.label), zap.Int64("total", total))
		}
	}
	return len(p), nil
}

// startSpill opens the spill file and writes the head held so far: until the
// first overflow the tail ring holds every byte.
func (c *capture) startSpill() {
	f, err := c.open(c.label)
	if err != nil {
		c.logger.Warn("spill file unavailable", zap.String("stream", c.label), zap.Error(err))
		return
	}
	c.spill, c.spillPath = f, f.Name()
	if _, err := f.Write(c.tail.bytes()); err != nil {
		c.abandonSpill(err)
	}
}

// abandonSpill drops a spill file that could not be written in full: a path
// to an incomplete file would be a lie, so the stream reports "unavailable".
func (c *capture) abandonSpill(err error) {
	c.logger.Warn("spill write failed", zap.String("path", c.spillPath), zap.Error(err))
	_ = c.spill.Close()
	_ = os.Remove(c.spillPath)
	c.spill, c.spillPath = nil, ""
}

// finish closes the spill file; later writes are discarded.
func (c *capture) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.spill != nil {
		if err := c.spill.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			c.abandonSpill(err)
			return
		}
		c.spill = nil
	}
}

// output is the foreground view of the stream.
func (c *capture) output() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.tail.bytes()
	if c.overflowed {
		b = b[skipPartialRune(b):]
	}
	return Output{Text: string(b), Truncated: c.overflowed, SpillPath: c.spillPath, Bytes: c.total}
}

// take returns the unread bytes and empties the queue. While the stream is
// still open an incomplete trailing rune is held back for the next read, so
// consecutive chunks split only on rune boundaries.
func (c *capture) take() Chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unread == nil {
		return Chunk{}
	}
	b := c.unread.bytes()
	dropped := c.dropped
	if dropped > 0 {
		skip := skipPartialRune(b)
		b = b[skip:]
		dropped += int64(skip)
	}
	c.unread.reset()
	c.dropped = 0
	if !c.closed {
		if k := incompleteSuffix(b); k > 0 {
			c.unread.write(b[len(b)-k:])
			b = b[:len(b)-k]
		}
	}
	ch := Chunk{Text: string(b), Dropped: dropped}
	if c.overflowed {
		ch.SpillPath = c.spillPath
	}
	return ch
}

// releaseTail frees the tail ring once only the unread queue matters.
func (c *capture) releaseTail() {
	c.mu.Lock()
	c.tail = ring{max: c.tail.max}
	c.mu.Unlock()
}
