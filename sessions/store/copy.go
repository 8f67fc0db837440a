package store

import (
	"fmt"
	"strconv"
	"time"
)

// Seq is the Seq of the last entry appended (or read by Open); 0 when
// there is none.
func (sess *Session) Seq() int64 {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.seq
}

// Copy appends e as it is, its Seq, Kind, Time and data kept: a fork's log
// is its original's entries, so that what refers to an entry by its Seq (a
// compaction) still names the same one. e.Seq must be past the last Seq;
// Seqs may leave gaps (the entries a fork leaves out). Buffered as Append.
func (sess *Session) Copy(e Entry) error {
	if !knownKind(e.Kind) {
		return fmt.Errorf("copy entry %d: %w %q", e.Seq, ErrUnknownKind, e.Kind)
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return ErrClosed
	}
	if e.Seq <= sess.seq {
		return fmt.Errorf("copy entry %d: not past the last entry, %d", e.Seq, sess.seq)
	}
	sess.seq = e.Seq
	b := sess.buf
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, string(e.Kind))
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = append(b, e.Data...)
	b = append(b, "}\n"...)
	sess.buf = b
	sess.noteMeta(e.Kind, e.Data, e.Time)
	if len(sess.buf) >= sess.store.flushBytes {
		return sess.writeBuf()
	}
	return nil
}
