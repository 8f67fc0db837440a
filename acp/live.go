package acp

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/tools"
)

// liveTail bounds, per stream, what is kept of a running command's output
// for display; the model's copy is bounded separately by the executor.
const liveTail = 32 << 10

// liveOutput is a running command's output kept for display: the reads of
// both streams in the order they arrived, each read whole (a rune split
// across two reads waits for its end), each stream bounded by its own max.
// Bytes dropped to stay in bound are not lost silently: the text shows, on
// a line of its own before what is left of the stream, how many there were
// and the file that holds them, and the stream resumes at its next line
// start where it has one. Not safe for concurrent use.
type liveOutput struct {
	max int
	// chunks are the reads kept, oldest first; consecutive reads of one
	// stream share a chunk.
	chunks []liveChunk
	// streams, in the order first seen.
	streams []*liveStream
}

type liveChunk struct {
	stream *liveStream
	data   []byte
}

type liveStream struct {
	name string
	// kept is how many of the stream's bytes the chunks hold.
	kept int
	// skipped counts the bytes dropped since the last reset.
	skipped int64
	// carry is an incomplete rune that ended the last read.
	carry []byte
	// fullOutput is the file that holds every byte, as last told.
	fullOutput string
	// cutAtLineEnd: the last byte dropped was a newline, so what is kept
	// starts a line.
	cutAtLineEnd bool
	// noted is render's scratch: the skipped line was written.
	noted bool
}

func newLiveOutput(max int) *liveOutput { return &liveOutput{max: max} }

func (o *liveOutput) stream(name string) *liveStream {
	for _, st := range o.streams {
		if st.name == name {
			return st
		}
	}
	st := &liveStream{name: name}
	o.streams = append(o.streams, st)
	return st
}

// add keeps one read, dropping the stream's oldest bytes beyond max.
func (o *liveOutput) add(c tools.Chunk) {
	st := o.stream(c.Stream)
	// Empty once a spill file could not be written: then there is none.
	st.fullOutput = c.FullOutput
	b := c.Data
	if len(st.carry) > 0 {
		b = append(st.carry, b...)
		st.carry = nil
	}
	whole := validUTF8Prefix(b)
	if len(whole) < len(b) {
		st.carry = append([]byte(nil), b[len(whole):]...)
	}
	if len(whole) == 0 {
		return
	}
	if n := len(o.chunks); n > 0 && o.chunks[n-1].stream == st {
		o.chunks[n-1].data = append(o.chunks[n-1].data, whole...)
	} else {
		o.chunks = append(o.chunks, liveChunk{stream: st, data: append([]byte(nil), whole...)})
	}
	st.kept += len(whole)
	if over := st.kept - o.max; over > 0 {
		o.drop(st, over)
		o.resume(st)
	}
}

// drop removes the stream's n oldest kept bytes.
func (o *liveOutput) drop(st *liveStream, n int) {
	emptied := false
	for i := range o.chunks {
		if n == 0 {
			break
		}
		ch := &o.chunks[i]
		if ch.stream != st || len(ch.data) == 0 {
			continue
		}
		k := min(n, len(ch.data))
		st.cutAtLineEnd = ch.data[k-1] == '\n'
		ch.data = ch.data[k:]
		n -= k
		st.kept -= k
		st.skipped += int64(k)
		emptied = emptied || len(ch.data) == 0
	}
	if emptied {
		kept := o.chunks[:0]
		for _, ch := range o.chunks {
			if len(ch.data) > 0 {
				kept = append(kept, ch)
			}
		}
		clear(o.chunks[len(kept):])
		o.chunks = kept
	}
}

// resume drops what is left of a cut line, so the stream goes on at a line
// start; with no newline kept, at least at a rune start.
func (o *liveOutput) resume(st *liveStream) {
	if st.cutAtLineEnd {
		return
	}
	skip := 0
	for _, ch := range o.chunks {
		if ch.stream != st {
			continue
		}
		if i := bytes.IndexByte(ch.data, '\n'); i >= 0 {
			o.drop(st, skip+i+1)
			return
		}
		skip += len(ch.data)
	}
	for _, ch := range o.chunks {
		if ch.stream != st {
			continue
		}
		// The cut split a rune at most (reads are kept whole); past
		// UTFMax-1 bytes it is not UTF-8 and there is no start to find.
		n := 0
		for n < len(ch.data) && n < utf8.UTFMax-1 && !utf8.RuneStart(ch.data[n]) {
			n++
		}
		if n > 0 {
			o.drop(st, n)
		}
		return
	}
}

// render is the kept output as text, with a skipped line for every stream
// that dropped bytes: before what is left of it, or at the end when nothing
// is. atLineStart says whether the text this one follows ended a line; the
// result says it of the text returned.
func (o *liveOutput) render(atLineStart bool) (string, bool) {
	var b strings.Builder
	note := func(st *liveStream) {
		if !atLineStart {
			b.WriteByte('\n')
		}
		b.WriteString(skippedLine(st.skipped, st.fullOutput))
		b.WriteByte('\n')
		atLineStart = true
		st.noted = true
	}
	for _, st := range o.streams {
		st.noted = false
	}
	for _, ch := range o.chunks {
		if ch.stream.skipped > 0 && !ch.stream.noted {
			note(ch.stream)
		}
		b.Write(ch.data)
		atLineStart = ch.data[len(ch.data)-1] == '\n'
	}
	for _, st := range o.streams {
		if st.skipped > 0 && !st.noted {
			note(st)
		}
	}
	return b.String(), atLineStart
}

// reset forgets what was rendered, for output that is sent as increments.
// An incomplete rune stays for the read that ends it.
func (o *liveOutput) reset() {
	clear(o.chunks)
	o.chunks = o.chunks[:0]
	for _, st := range o.streams {
		st.kept, st.skipped = 0, 0
	}
}

// skippedLine is the editor-only line pinned in tool-text.md ("Live output
// that skipped bytes between two updates").
func skippedLine(n int64, fullOutput string) string {
	if fullOutput == "" {
		fullOutput = "(unavailable)"
	}
	return "[… " + strconv.FormatInt(n, 10) + " bytes not shown; full output: " + fullOutput + "]"
}

// validUTF8Prefix returns p up to the last complete rune, so a rune split
// across two reads is sent whole with the next.
func validUTF8Prefix(p []byte) []byte {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return p[:i]
			}
			return p
		}
	}
	return p
}
