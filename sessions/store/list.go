package store

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// PageSize is how many sessions a page of List holds when the caller does
// not say.
const PageSize = 50

// Info is a stored session as List shows it.
type Info struct {
	ID  string
	Cwd string
	// Roots are the extra project roots stored with the session (none
	// when the sidecar is missing: they are in the log, not its header).
	Roots []string
	Title string
	// Created is when the session was created; Updated is the time of its
	// last entry made durable by a Sync (Created if none).
	Created time.Time
	Updated time.Time
}

// ListOptions select a page of List.
type ListOptions struct {
	// Cwd keeps only the sessions whose cwd is this directory (compared
	// after filepath.Clean); empty means all.
	Cwd string
	// Cursor is a Page's NextCursor, to get the page after it; empty means
	// the first page. A cursor List did not make is ErrBadCursor.
	Cursor string
	// Limit is the page size; zero means PageSize.
	Limit int
}

// Page is one page of List.
type Page struct {
	// Sessions are newest first by Updated (ties by ID).
	Sessions []Info
	// NextCursor gets the next page; empty on the last page.
	NextCursor string
}

// List returns a page of the stored sessions, newest first. It reads each
// session's small sidecar, never its log (only the log's first line when
// the sidecar is missing). Files that are not ours or are newer are skipped
// with a warning. Sessions live in this process are listed as last synced.
//
// Paging is by key (time and id of the last session shown), so sessions
// added or updated between two pages do not shift the pages; one updated
// meanwhile may show on both or neither, as in any keyset paging.
func (s *Store) List(opts ListOptions) (Page, error) {
	q, err := newQuery(opts)
	if err != nil {
		return Page{}, err
	}
	des, err := readDir(s.sessionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return Page{}, nil
	}
	if err != nil {
		return Page{}, fmt.Errorf("list sessions: %w", err)
	}
	infos := s.infos(des, q)
	sort.Slice(infos, func(i, j int) bool { return newer(infos[i], infos[j]) })
	var p Page
	if len(infos) > q.limit {
		last := infos[q.limit-1]
		p.NextCursor = cursor{updated: last.Updated.UnixNano(), id: last.ID}.String()
		infos = infos[:q.limit]
	}
	p.Sessions = infos
	return p, nil
}

// query is what List's options select.
type query struct {
	after *cursor // nil: from the first
	cwd   string  // cleaned; empty: any
	limit int
}

func newQuery(opts ListOptions) (query, error) {
	q := query{limit: opts.Limit}
	if opts.Cursor != "" {
		c, err := parseCursor(opts.Cursor)
		if err != nil {
			return query{}, err
		}
		q.after = &c
	}
	if q.limit <= 0 {
		q.limit = PageSize
	}
	if opts.Cwd != "" {
		q.cwd = filepath.Clean(opts.Cwd)
	}
	return q, nil
}

// wants reports whether info is on a page q selects.
func (q query) wants(info Info) bool {
	if q.cwd != "" && filepath.Clean(info.Cwd) != q.cwd {
		return false
	}
	return q.after == nil || q.after.before(info)
}

// infos reads what List shows of each session of des (the sessions
// directory's entries) that q selects, unsorted.
func (s *Store) infos(des []os.DirEntry, q query) []Info {
	buf := make([]byte, 4096)
	metas := make(map[string]bool, len(des)/2)
	for _, de := range des {
		if id, ok := strings.CutSuffix(de.Name(), ".meta.json"); ok {
			metas[id] = true
		}
	}
	infos := make([]Info, 0, len(des)/2)
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || !validID(id) {
			continue
		}
		if info, ok := s.info(id, metas[id], &buf); ok && q.wants(info) {
			infos = append(infos, info)
		}
	}
	return infos
}

// newer is List's order: Updated descending, then ID ascending.
func newer(a, b Info) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return a.ID < b.ID
}

// info reads what List shows of one session: from its sidecar, else from
// its log's header; false means skip it (the reason is logged).
func (s *Store) info(id string, hasMeta bool, buf *[]byte) (Info, bool) {
	// Not s.log.With: a logger per session listed costs more than the read.
	log := func(msg string, fields ...zap.Field) {
		s.log.Warn(msg, append(fields, zap.String("session", id))...)
	}
	if hasMeta {
		if info, ok, known := s.metaInfo(id, buf, log); known {
			return info, ok
		}
		// An unreadable sidecar: the log decides.
	}
	return s.headerInfo(id, log)
}

// metaInfo reads a session's sidecar; known is false when the sidecar is
// unreadable or not ours, and ok false when the session is to be skipped.
func (s *Store) metaInfo(id string, buf *[]byte, log func(string, ...zap.Field)) (info Info, ok, known bool) {
	data, err := readSmall(s.metaPath(id), buf)
	var m meta
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	switch {
	case err != nil || m.Format != Format:
		return Info{}, false, false
	case m.Version > Version:
		log("store: session of a newer format version skipped", zap.Int("version", m.Version))
		return Info{}, false, true
	case m.Version >= 1 && m.ID == id:
		return Info{ID: id, Cwd: m.Cwd, Roots: m.Roots, Title: m.Title, Created: m.Created, Updated: m.Updated}, true, true
	}
	return Info{}, false, false
}

// headerInfo reads what List shows of a session from its log's first
// line.
func (s *Store) headerInfo(id string, log func(string, ...zap.Field)) (Info, bool) {
	f, err := openRegular(s.logPath(id), os.O_RDONLY, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) { // deleted meanwhile is no news
			log("store: unreadable session file skipped", zap.Error(err))
		}
		return Info{}, false
	}
	defer f.Close()
	line, err := readFirstLine(f)
	var h Header
	if err == nil {
		h, err = parseHeader(line)
	}
	if err == nil && h.ID != id {
		err = ErrForeign
	}
	if err != nil {
		log("store: file skipped", zap.String("path", f.Name()), zap.Error(err))
		return Info{}, false
	}
	fi, err := f.Stat()
	if err != nil {
		log("store: unreadable session file skipped", zap.Error(err))
		return Info{}, false
	}
	// No title without the sidecar: it would take the whole log. The next
	// Open of the session writes the sidecar again.
	return Info{ID: id, Cwd: h.Cwd, Created: h.Created, Updated: fi.ModTime().UTC()}, true
}

// cursor is the position after which the next page starts.
type cursor struct {
	updated int64 // Unix nanoseconds
	id      string
}

const cursorPrefix = "v1."

func (c cursor) String() string {
	raw := strconv.FormatInt(c.updated, 10) + "." + c.id
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseCursor(s string) (cursor, error) {
	enc, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return cursor{}, ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return cursor{}, ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(raw), ".")
	if !ok || !validID(id) {
		return cursor{}, ErrBadCursor
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return cursor{}, ErrBadCursor
	}
	return cursor{updated: n, id: id}, nil
}

// before reports whether c comes before info in List's order, so info
// belongs to a page after c.
func (c cursor) before(info Info) bool {
	u := info.Updated.UnixNano()
	if u != c.updated {
		return u < c.updated
	}
	return info.ID > c.id
}

// readDir lists dir unsorted (List sorts by time; os.ReadDir's sort by name
// would be wasted).
func readDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// maxMeta bounds a sidecar: its id, cwd (a path) and title (TitleMax
// characters) take a few KiB at most.
const maxMeta = 64 << 10

// readSmall reads a small regular file (a sidecar) into *buf (grown as
// needed, up to maxMeta) in four system calls: List does this once per
// session, and os.ReadFile's extra read and poller registration were most
// of List's time. A link is not followed and a FIFO does not block the
// open; neither is read (errNotRegular).
func readSmall(path string, buf *[]byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	}
	if errors.Is(err, unix.ELOOP) {
		err = errNotRegular
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	b := *buf
	n := 0
	for {
		if n == len(b) {
			if n >= maxMeta {
				return nil, fmt.Errorf("read %s: over %d bytes", path, maxMeta)
			}
			b = append(b, make([]byte, len(b))...)
			*buf = b
		}
		m, err := unix.Read(fd, b[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 || n+m < len(b) {
			return b[:n+m], nil
		}
		n += m
	}
}
