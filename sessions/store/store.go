// Package store is the durable form of sessions: one append-only JSON Lines
// file per session under a state directory, an advisory lock per session so
// that a session is live in at most one process, a cheap listing, and a
// store-wide task-id counter. It knows nothing of the protocol or of the
// model provider: it stores the entries it is given and hands them back.
//
// Layout of a state directory (everything 0600 in 0700 directories):
//
//	<dir>/sessions/<id>.jsonl      the session's log: a Header line, then one Entry a line
//	<dir>/sessions/<id>.meta.json  a small sidecar (id, cwd, title, created, updated) rewritten at Sync
//	<dir>/task-ids                 the next task number of the store (see NextTaskIDs)
//	<dir>/task-ids.lock            the lock that serialises NextTaskIDs between processes
//
// The sidecar exists so that List reads a few hundred bytes per session,
// never a log: a title or the time of the last entry would otherwise need the
// whole file. It is derived data, written only by the process that holds the
// session's lock; Open rewrites it from the log, and List falls back to the
// log's first line (and the file's mtime) when it is missing.
//
// What the store must never hold: the API key (callers must not put it in
// any payload — the store cannot tell a secret from text) and the contents of
// a spill file (a tool result carries the text the model was given, which
// names the spill file, not its bytes).
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Version is the format version this package writes and the newest it reads.
// Within a version, new entry kinds and new payload fields may appear: readers
// skip kinds they do not know and ignore fields they do not know.
const Version = 1

// Format is the value of the header's "format" field: what makes a file ours.
const Format = "dsh-acp/session"

// Sentinel errors, for errors.Is.
var (
	// ErrLocked: the session is live in another dsh-acp process.
	ErrLocked = errors.New("session is open in another dsh-acp process")
	// ErrOpen: the session is already open through this Store; the caller
	// should use the *Session it already has.
	ErrOpen = errors.New("session is already open in this process")
	// ErrNotFound: no stored session has this id (an id that could not name
	// a session file, such as "../x", is not found either).
	ErrNotFound = errors.New("session not found in the store")
	// ErrExists: Create was given an id that is already stored.
	ErrExists = errors.New("session already exists in the store")
	// ErrForeign: the file is not a dsh-acp session file; it is never written.
	ErrForeign = errors.New("not a dsh-acp session file")
	// ErrNewerVersion: the file was written by a newer dsh-acp; it is never written.
	ErrNewerVersion = errors.New("session file has a newer format version")
	// ErrBadCursor: List was given a cursor it did not make.
	ErrBadCursor = errors.New("malformed list cursor")
	// ErrBadID: Create was given an id that cannot name a file.
	ErrBadID = errors.New("invalid session id")
	// ErrTooLarge: the session file is over the bound the store loads
	// (Options.MaxLogBytes); it is left untouched.
	ErrTooLarge = errors.New("session file is too large to load")
	// ErrClosed: the Session was closed.
	ErrClosed = errors.New("session closed")
)

// Options configure a Store.
type Options struct {
	// Dir is the state directory. Required; see DefaultDirFor.
	Dir string
	// Logger receives warnings (torn lines, skipped files, unknown kinds);
	// nil means none.
	Logger *zap.Logger
	// Now stamps entries and the sidecar; nil means time.Now.
	Now func() time.Time
	// FlushBytes is how many buffered bytes make Append write through before
	// the next Sync (without fsync); zero means 64 KiB.
	FlushBytes int
	// MaxLogBytes bounds the size of a session file Open loads (ErrTooLarge
	// past it); zero means DefaultMaxLogBytes.
	MaxLogBytes int64
}

// DefaultMaxLogBytes is the largest session file Open loads by default: a
// loaded session costs about its file's size in memory, and a year of a
// busy session's turns is well under it.
const DefaultMaxLogBytes = 1 << 30

// Store is a state directory. Safe for concurrent use; several processes may
// use the same directory at once.
type Store struct {
	dir        string
	log        *zap.Logger
	now        func() time.Time
	flushBytes int
	// maxLogBytes: see Options.MaxLogBytes.
	maxLogBytes int64

	// mu guards open.
	mu sync.Mutex
	// open holds the ids of the sessions opened (or created) through this
	// Store and not yet closed: flock does not tell two descriptors of one
	// process apart from two processes, this does.
	open map[string]bool
}

// New returns the store in opts.Dir. It touches nothing on disk (opening a
// store is O(1)); directories are made on the first write.
func New(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("store: no state directory")
	}
	s := &Store{
		dir:         opts.Dir,
		log:         opts.Logger,
		now:         opts.Now,
		flushBytes:  opts.FlushBytes,
		maxLogBytes: opts.MaxLogBytes,
		open:        map[string]bool{},
	}
	if s.maxLogBytes <= 0 {
		s.maxLogBytes = DefaultMaxLogBytes
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.flushBytes <= 0 {
		s.flushBytes = 64 << 10
	}
	return s, nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) sessionsDir() string       { return filepath.Join(s.dir, "sessions") }
func (s *Store) logPath(id string) string  { return filepath.Join(s.sessionsDir(), id+".jsonl") }
func (s *Store) metaPath(id string) string { return filepath.Join(s.sessionsDir(), id+".meta.json") }

// ensureDirs makes the state directory and its sessions directory, 0700.
// An existing state directory keeps its mode (it may be one the user chose);
// the sessions directory is ours and is made private if it is not.
func (s *Store) ensureDirs() error {
	if err := privateDir(s.dir); err != nil {
		return fmt.Errorf("make state dir: %w", err)
	}
	sd := s.sessionsDir()
	if err := os.Mkdir(sd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make sessions dir: %w", err)
	}
	// Lstat: a link put in its place is not ours to write through.
	fi, err := os.Lstat(sd)
	if err != nil {
		return fmt.Errorf("make sessions dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("make sessions dir: %s is not a directory", sd)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(sd, 0o700); err != nil {
			return fmt.Errorf("make sessions dir private: %w", err)
		}
	}
	return nil
}

// privateDir makes dir and its parents, on first need, 0700: what the
// store keeps is the user's alone. An existing directory keeps its mode.
func privateDir(dir string) error {
	return os.MkdirAll(dir, 0o700)
}

// validID reports whether id can name a session file: ASCII letters, digits,
// '-', '_' and '.', not starting with '.', at most 128 bytes. Ids come from
// the client on load, so this is what keeps them inside the directory.
func validID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// DefaultDirFor is the state directory when --state-dir is not given, for
// a GOOS and an environment (it touches nothing on disk):
// DSH_STATE_DIR if set; else $XDG_STATE_HOME/dsh-acp if XDG_STATE_HOME is
// absolute (the XDG spec says to ignore a relative one); else
// ~/Library/Application Support/dsh-acp on darwin and ~/.local/state/dsh-acp
// elsewhere. No HOME is an error.
func DefaultDirFor(goos string, getenv func(string) string) (string, error) {
	if d := getenv("DSH_STATE_DIR"); d != "" {
		return d, nil
	}
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "dsh-acp"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("state dir: neither DSH_STATE_DIR, XDG_STATE_HOME nor HOME is set")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "dsh-acp"), nil
	}
	return filepath.Join(home, ".local", "state", "dsh-acp"), nil
}
