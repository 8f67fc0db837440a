package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// maxHeader bounds how much of a file is read to find its header line.
const maxHeader = 64 << 10

// Session is a stored session held open, and locked, by this process: the
// only way to append to it. Safe for concurrent use.
//
// Appends are buffered; Sync makes them durable and is what the caller does
// at every turn boundary (end of a prompt, a config change, a close). A
// process killed between two Syncs loses the entries since the last one, and
// at most leaves a torn last line, which the next Open drops.
type Session struct {
	store   *Store
	id      string
	header  Header
	entries []Entry
	// keep: Open holds the entries it reads (not OpenState).
	keep bool
	// fold is, after OpenState, the State of the entries it read, folded
	// as they streamed by; nil otherwise (State folds entries).
	fold *folder

	// mu guards everything below.
	mu sync.Mutex
	f  *os.File
	// buf holds the lines appended since they were last written to f.
	buf []byte
	// size is where the last complete line written to f ends: what f is
	// truncated back to when a write fails half way.
	size int64
	// unsynced: bytes were written to f since its last fsync.
	unsynced bool
	// dirUnsynced: the file's directory entry is not yet durable (a
	// created session before its first Sync).
	dirUnsynced bool
	seq         int64
	meta        meta
	// metaDirty: meta changed since the sidecar was last written.
	metaDirty bool
	closed    bool
}

// meta is the sidecar of a session: what List shows, without the log.
type meta struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Cwd     string    `json:"cwd"`
	Roots   []string  `json:"roots,omitempty"`
	Title   string    `json:"title,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Create stores a new session with this id and cwd and returns it open.
// The header is durable at the session's first Sync (a turn boundary): a
// session/new answered in microseconds matters more than a session that
// never had a prompt. An id already stored is
// ErrExists; one that cannot name a file is ErrBadID.
func (s *Store) Create(id, cwd string) (*Session, error) {
	if !validID(id) {
		return nil, fmt.Errorf("create session %q: %w", id, ErrBadID)
	}
	if cwd == "" {
		return nil, fmt.Errorf("create session %s: no cwd", id)
	}
	if err := s.ensureDirs(); err != nil {
		return nil, err
	}
	sess, err := s.reserved(id, ErrExists, func() (*Session, error) { return s.create(id, cwd) })
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	return sess, nil
}

// reserved runs open with id reserved to this Store, and keeps the
// reservation only if open succeeds; taken is the error when id is
// reserved already.
func (s *Store) reserved(id string, taken error, open func() (*Session, error)) (*Session, error) {
	if !s.reserve(id) {
		return nil, taken
	}
	sess, err := open()
	if err != nil {
		s.release(id)
		return nil, err
	}
	return sess, nil
}

func (s *Store) create(id, cwd string) (*Session, error) {
	path := s.logPath(id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrExists
	}
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			closeUnlocked(f)
		}
	}()
	if err := flock(f, false); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	h := Header{Format: Format, Version: Version, ID: id, Cwd: cwd, Created: now}
	line, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	line = append(line, '\n')
	if _, err := f.Write(line); err != nil {
		os.Remove(path)
		return nil, err
	}
	sess := &Session{
		unsynced:    true,
		dirUnsynced: true,
		store:       s,
		id:          id,
		header:      h,
		f:           f,
		size:        int64(len(line)),
		meta:        meta{Format: Format, Version: Version, ID: id, Cwd: cwd, Created: now, Updated: now},
	}
	if err := sess.writeMeta(); err != nil {
		return nil, err
	}
	ok = true
	return sess, nil
}

// Open locks the stored session id and reads it; its entries are then in
// Entries and State, and Append continues it. A session live in another
// process is ErrLocked; one already open through this Store is ErrOpen (use
// the *Session you have); an unknown id is ErrNotFound; a file that is not
// ours or is newer is ErrForeign or ErrNewerVersion and is left untouched.
//
// A torn last line (the writer was killed mid-write) is dropped with a
// warning and cut off the file, so that the next append starts a clean
// line. Lines that do not parse and entries of unknown kinds are skipped
// with a warning. Neither fails the load.
func (s *Store) Open(id string) (*Session, error) {
	return s.openSession(id, true)
}

// OpenState is Open without holding the entries: State is folded while the
// log streams by and Entries is nil; Scan reads the conversation back. A
// caller that rebuilds what it needs from a log as large as the store
// allows holds it once, not twice.
func (s *Store) OpenState(id string) (*Session, error) {
	return s.openSession(id, false)
}

func (s *Store) openSession(id string, keep bool) (*Session, error) {
	if !validID(id) {
		return nil, fmt.Errorf("open session %q: %w", id, ErrNotFound)
	}
	sess, err := s.reserved(id, ErrOpen, func() (*Session, error) { return s.openLocked(id, keep) })
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	return sess, nil
}

// lockLog opens the log of session id (flag as os.OpenFile's) and takes
// its lock without waiting: ErrNotFound when there is none, or it was
// deleted while the lock was taken; ErrForeign when it is not a regular
// file; flock's error when another process holds the lock. Close f with
// closeUnlocked.
func (s *Store) lockLog(id string, flag int) (*os.File, error) {
	f, err := openRegular(s.logPath(id), flag, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, ErrNotFound
	case errors.Is(err, errNotRegular):
		return nil, fmt.Errorf("%w: %w", ErrForeign, err)
	case err != nil:
		return nil, err
	}
	if err := flock(f, false); err != nil {
		closeUnlocked(f)
		return nil, err
	}
	if same, err := sameFile(f); err != nil || !same {
		closeUnlocked(f)
		if err != nil {
			return nil, err
		}
		return nil, ErrNotFound // deleted while we took the lock
	}
	return f, nil
}

func (s *Store) openLocked(id string, keep bool) (*Session, error) {
	f, err := s.lockLog(id, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			closeUnlocked(f)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Checked before reading a byte: a sparse file of gigabytes costs
	// nothing to make and would end the process (and every session in it).
	if fi.Size() > s.maxLogBytes {
		return nil, fmt.Errorf("%w: %s is %s, over the %s this dsh-acp loads", ErrTooLarge,
			f.Name(), humanBytes(fi.Size()), humanBytes(s.maxLogBytes))
	}
	sess := &Session{store: s, id: id, f: f, keep: keep}
	if err := sess.load(io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return nil, err
	}
	if sess.size < fi.Size() {
		// Cut the torn tail so the next line does not glue onto it. Ours to
		// cut: the header is ours and we hold the lock.
		if err := f.Truncate(sess.size); err != nil {
			return nil, fmt.Errorf("cut torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
	}
	// The sidecar may be missing or behind (killed before a Sync wrote it).
	if err := sess.writeMeta(); err != nil {
		return nil, err
	}
	ok = true
	return sess, nil
}

// humanBytes is n in the largest binary unit that keeps it at least 1.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// parseHeader reads a header line; not ours is ErrForeign, newer is
// ErrNewerVersion.
func parseHeader(line []byte) (Header, error) {
	var h Header
	if err := json.Unmarshal(line, &h); err != nil || h.Format != Format || h.Version < 1 || h.ID == "" {
		return Header{}, ErrForeign
	}
	if h.Version > Version {
		return Header{}, fmt.Errorf("%w %d (this dsh-acp reads up to %d)", ErrNewerVersion, h.Version, Version)
	}
	return h, nil
}

// load reads a session file into sess, a line at a time: the file is never
// held in memory whole, only the entries it decodes to.
func (sess *Session) load(r io.Reader) error {
	log := sess.store.log.With(zap.String("session", sess.id))
	lr := lineReader{r: bufio.NewReaderSize(r, 64<<10)}
	first, complete, err := lr.next()
	if err != nil {
		return err
	}
	if !complete || len(first) > maxHeader {
		return ErrForeign
	}
	h, err := parseHeader(first)
	if err != nil {
		return err
	}
	if h.ID != sess.id {
		return fmt.Errorf("%w: header names session %q", ErrForeign, h.ID)
	}
	sess.header = h
	if !sess.keep {
		sess.fold = newFolder(h)
	}
	sess.meta = meta{Format: Format, Version: Version, ID: h.ID, Cwd: h.Cwd, Created: h.Created, Updated: h.Created}
	sess.size = lr.off
	for lineNo := 2; ; lineNo++ {
		line, complete, err := lr.next()
		if err != nil {
			return err
		}
		if !complete {
			if len(line) > 0 {
				log.Warn("store: torn last line ignored", zap.Int("line", lineNo), zap.Int("bytes", len(line)))
			}
			return nil
		}
		sess.size = lr.off
		sess.loadLine(line, lineNo, log)
	}
}

// loadLine adds the entry of one complete line, skipping (with a warning)
// a line that does not parse or an entry of an unknown kind.
func (sess *Session) loadLine(line []byte, lineNo int, log *zap.Logger) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		log.Warn("store: unreadable line skipped", zap.Int("line", lineNo), zap.Error(err))
		return
	}
	if e.Seq > sess.seq {
		sess.seq = e.Seq
	}
	if !knownKind(e.Kind) {
		log.Warn("store: entry of unknown kind skipped", zap.Int("line", lineNo), zap.String("kind", string(e.Kind)))
		return
	}
	if sess.keep {
		sess.entries = append(sess.entries, e)
	} else {
		sess.fold.add(e)
	}
	sess.noteMeta(e.Kind, e.Data, e.Time)
}

// lineReader splits a file into lines and counts the bytes consumed.
type lineReader struct {
	r *bufio.Reader
	// off is where the last complete line returned ends.
	off int64
	// long holds a line longer than r's buffer while it is gathered.
	long []byte
}

// next returns the next line without its newline; complete is false for
// the last bytes of the file when no newline ends them (a torn line, or
// nothing at the end of the file). The line is valid until the next call.
func (lr *lineReader) next() (line []byte, complete bool, err error) {
	lr.long = lr.long[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			if len(lr.long) > 0 {
				chunk = append(lr.long, chunk...)
				lr.long = chunk
			}
			lr.off += int64(len(chunk))
			return chunk[:len(chunk)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.long = append(lr.long, chunk...)
		case errors.Is(err, io.EOF):
			return append(lr.long, chunk...), false, nil
		default:
			return nil, false, fmt.Errorf("read session file: %w", err)
		}
	}
}

// ReadEntries reads back every entry of the session, those appended since
// Open included (a replay of a session live in this process). Lines that do
// not parse and kinds not known are skipped, as Open skips them.
func (sess *Session) ReadEntries() ([]Entry, error) {
	var out []Entry
	err := sess.Scan(func(e Entry) bool {
		out = append(out, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Scan is ReadEntries one entry at a time, the log streaming by: fn is
// given each entry in order until it returns false. Nothing is held but
// the entry fn is given.
func (sess *Session) Scan(fn func(Entry) bool) error {
	// The file up to size is never rewritten (appends only; a failed write
	// is cut back to size), so it is read without holding the lock that
	// the turn's appends need.
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return ErrClosed
	}
	size := sess.size
	pending := bytes.Clone(sess.buf)
	sess.mu.Unlock()
	lr := lineReader{r: bufio.NewReaderSize(io.MultiReader(io.NewSectionReader(sess.f, 0, size), bytes.NewReader(pending)), 64<<10)}
	for first := true; ; first = false {
		line, complete, err := lr.next()
		if err != nil {
			return err
		}
		if !complete {
			return nil
		}
		if first {
			continue // the header
		}
		var e Entry
		if json.Unmarshal(line, &e) == nil && knownKind(e.Kind) && !fn(e) {
			return nil
		}
	}
}

// noteMeta keeps the sidecar's fields up to date with an entry.
func (sess *Session) noteMeta(k Kind, data []byte, t time.Time) {
	switch k {
	case KindTitle:
		var p Title
		if json.Unmarshal(data, &p) == nil {
			sess.meta.Title = p.Title
		}
	case KindCwd:
		var p Cwd
		if json.Unmarshal(data, &p) == nil && p.Cwd != "" {
			sess.meta.Cwd = p.Cwd
		}
	case KindRoots:
		var p Roots
		if json.Unmarshal(data, &p) == nil {
			sess.meta.Roots = p.Roots
		}
	}
	if t.After(sess.meta.Updated) {
		sess.meta.Updated = t
	}
	sess.metaDirty = true
}

// ID returns the session's id.
func (sess *Session) ID() string { return sess.id }

// Header returns the session's header.
func (sess *Session) Header() Header { return sess.header }

// Entries returns the entries read by Open, in order (nil after Create,
// OpenState and ReleaseEntries).
// Entries appended since are not included. The slice is shared: do not
// modify it.
func (sess *Session) Entries() []Entry { return sess.entries }

// State folds the header and the entries read by Open (see Fold).
func (sess *Session) State() State {
	if sess.fold != nil {
		return sess.fold.state()
	}
	return Fold(sess.header, sess.entries)
}

// ReleaseEntries drops the entries read by Open, once the caller has what
// it needs of them (Entries and State are empty after it): a live session
// would otherwise hold its whole log in memory for as long as it is open.
// ReadEntries still reads them back from the file.
func (sess *Session) ReleaseEntries() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.entries = nil
	sess.fold = nil
}

// Append adds an entry and returns its Seq. It is buffered (written through
// once FlushBytes are waiting); call Sync to make it durable. An error from
// a write-through leaves the entry buffered, for Sync to retry. p must not
// hold secrets: the store writes what it is given.
func (sess *Session) Append(p Payload) (int64, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", p.Kind(), err)
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return 0, ErrClosed
	}
	t := sess.store.now().UTC()
	sess.seq++
	// Built by hand: a second json.Marshal of the envelope would re-scan
	// data to compact it, and this is on every turn's path.
	b := sess.buf
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, sess.seq, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, string(p.Kind()))
	b = append(b, `,"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = append(b, data...)
	b = append(b, "}\n"...)
	sess.buf = b
	sess.noteMeta(p.Kind(), data, t)
	if len(sess.buf) >= sess.store.flushBytes {
		// A failed write-through keeps the entry buffered; Sync retries it.
		if err := sess.writeBuf(); err != nil {
			return sess.seq, err
		}
	}
	return sess.seq, nil
}

// writeBuf writes the buffered lines to the file. On a short write the file
// is cut back to its last complete line and the lines stay buffered.
func (sess *Session) writeBuf() error {
	if len(sess.buf) == 0 {
		return nil
	}
	n, err := sess.f.Write(sess.buf)
	if err != nil {
		if n > 0 {
			if terr := sess.f.Truncate(sess.size); terr != nil {
				return fmt.Errorf("write session %s: %w (and cut back: %v)", sess.id, err, terr)
			}
		}
		return fmt.Errorf("write session %s: %w", sess.id, err)
	}
	sess.size += int64(n)
	sess.buf = sess.buf[:0]
	sess.unsynced = true
	return nil
}

// Sync writes the buffered entries and fsyncs the file, then refreshes the
// sidecar List reads. Call it at every turn boundary. Nothing buffered is a
// no-op.
func (sess *Session) Sync() error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.syncOpen()
}

// syncOpen syncs an open session; ErrClosed once it is closed. Called with
// mu held.
func (sess *Session) syncOpen() error {
	if sess.closed {
		return ErrClosed
	}
	return sess.sync()
}

func (sess *Session) sync() error {
	if err := sess.writeBuf(); err != nil {
		return err
	}
	if sess.unsynced {
		if err := sess.f.Sync(); err != nil {
			return fmt.Errorf("sync session %s: %w", sess.id, err)
		}
		sess.unsynced = false
	}
	if sess.dirUnsynced {
		if err := syncDir(sess.store.sessionsDir()); err != nil {
			return fmt.Errorf("sync session %s: %w", sess.id, err)
		}
		sess.dirUnsynced = false
	}
	if sess.metaDirty {
		if err := sess.writeMeta(); err != nil {
			return err
		}
	}
	return nil
}

// writeMeta replaces the sidecar atomically (write a fresh temporary file,
// rename), so List never sees half of one and nothing planted beside it is
// followed. It is not fsynced: it is derived from the log, which is,
// and Open rewrites it.
func (sess *Session) writeMeta() error {
	data, err := json.Marshal(sess.meta)
	if err != nil {
		return err
	}
	if err := replaceFile(sess.store.metaPath(sess.id), data, false); err != nil {
		return fmt.Errorf("write sidecar: %w", err)
	}
	sess.metaDirty = false
	return nil
}

// Close syncs the session and releases its lock. The session stays in the
// store. Closing twice is a no-op.
func (sess *Session) Close() error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	err := sess.syncOpen()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	sess.closed = true
	if cerr := closeUnlocked(sess.f); err == nil {
		err = cerr
	}
	sess.store.release(sess.id)
	return err
}

// reserve marks id open through s; false if it already is.
func (s *Store) reserve(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] {
		return false
	}
	s.open[id] = true
	return true
}

func (s *Store) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, id)
}

// Delete removes a stored session's files. It refuses (ErrLocked) while
// another process has the session open, and (ErrOpen) while this Store has:
// close it first. A file that is not ours is never removed (ErrForeign,
// ErrNewerVersion).
func (s *Store) Delete(id string) error {
	if !validID(id) {
		return fmt.Errorf("delete session %q: %w", id, ErrNotFound)
	}
	if !s.reserve(id) {
		return fmt.Errorf("delete session %s: %w", id, ErrOpen)
	}
	defer s.release(id)
	if err := s.delete(id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

func (s *Store) delete(id string) error {
	path := s.logPath(id)
	f, err := s.lockLog(id, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer closeUnlocked(f)
	line, err := readFirstLine(f)
	if err != nil {
		return err
	}
	if h, err := parseHeader(line); err != nil {
		return err
	} else if h.ID != id {
		return fmt.Errorf("%w: header names session %q", ErrForeign, h.ID)
	}
	// The sidecar first: a log without one still lists, a sidecar without
	// its log would not.
	if err := os.Remove(s.metaPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	removeTemps(s.metaPath(id)) // left by a writer killed mid-rename, if any
	if err := os.RemoveAll(s.imagesDir(id)); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(s.sessionsDir())
}

// readFirstLine returns the first line of r (without its newline), read
// from the start of the file; a file whose first maxHeader bytes hold no
// newline is not ours.
func readFirstLine(f *os.File) ([]byte, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, maxHeader), 4096)
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long cwd: read on within the bound.
		var buf bytes.Buffer
		buf.Write(line)
		rest, err := br.ReadBytes('\n')
		buf.Write(rest)
		if err != nil {
			return nil, ErrForeign
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	if err != nil {
		return nil, ErrForeign
	}
	return line[:len(line)-1], nil
}
