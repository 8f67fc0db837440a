package changes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/dsh-acp/dsh-acp/internal/repo"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// racyWindow: a file whose mtime is this close to a walk may still be
// written within the same timestamp tick without its stat data changing
// (Linux stamps files from a coarse clock), so the next walk reads it again
// instead of trusting its stat data — git's "racy clean" rule.
const racyWindow = 50 * time.Millisecond

// headSize is how much of a file too large to keep is read to tell a binary
// file from a text one.
const headSize = 8 << 10

var errTooBig = errors.New("too many files")

// entry is one regular file of a snapshot.
type entry struct {
	// rel is the entry's key in its snapshot.
	rel   string
	size  int64
	mtime int64
	ino   uint64
	// ctime is when the file last changed, data or metadata (ns).
	ctime int64
	mode  uint32
	// regular: a regular file (statAt's answer; only those are kept).
	regular bool
	// racy: read too close to its mtime; the next walk reads it again.
	racy bool
	// known: text holds the whole content.
	known  bool
	text   string
	binary bool
}

func (e entry) sameStat(o entry) bool {
	return e.size == o.size && e.mtime == o.mtime && e.ino == o.ino && e.mode == o.mode
}

// sameVersion reports whether o holds what e held: the same bytes when
// both are known, else the same stat data (a touch without the bytes
// known counts as a change).
func (e entry) sameVersion(o entry) bool {
	if e.known && o.known {
		return e.text == o.text
	}
	return e.sameStat(o)
}

func (e entry) side() Side {
	return Side{Size: e.size, Text: e.text, Known: e.known, Binary: e.binary}
}

// snapshot is a tree's regular files, by directory (its path relative to
// the root, slash-separated; "" for the root). It is never changed once
// made, so a Mark can hold it while later walks make new ones; and so is
// each directory's part, so a refresh from events shares those of the
// directories no event named with the snapshot before it.
type snapshot struct {
	dirs map[string]*dirFiles
	// kept is the content bytes the files hold.
	kept int64
}

// dirFiles are the regular files of one directory, by their path relative
// to the root.
type dirFiles struct {
	files map[string]entry
	// kept is the content bytes the files hold.
	kept int64
	// mtime and ctime are the directory's own (ns; 0 when unknown): a
	// directory moved keeps its mtime and gets a new ctime, and so tells
	// where its files, whose ctimes the move leaves, came from.
	mtime, ctime int64
}

// get is a nil-safe lookup: a directory the snapshot does not hold has no
// files.
func (d *dirFiles) get(rel string) (entry, bool) {
	if d == nil {
		return entry{}, false
	}
	e, ok := d.files[rel]
	return e, ok
}

// lookup finds a file by its path as bytes, without allocating; the entry
// holds the path as a string, for the next snapshot to reuse.
func (s *snapshot) lookup(key []byte) (entry, bool) {
	d := s.dirs[string(key[:max(0, bytes.LastIndexByte(key, '/'))])]
	if d == nil {
		return entry{}, false
	}
	e, ok := d.files[string(key)]
	return e, ok
}

// tree is one key's root and its latest snapshot.
type tree struct {
	root   string
	opts   Options
	global []gitignore.Pattern
	// used is the Tracker's clock at the last use; guarded by Tracker.mu.
	used uint64

	// mu serializes the tree's walks and guards the fields below.
	mu     sync.Mutex
	cur    *snapshot
	tooBig bool
	// open counts the commands measured and not ended yet. While one is,
	// claimed keeps what the others that ended reported: a command running
	// beside them (a background task) does not report the same change
	// again.
	open    int
	claimed map[string]claim

	// watch tells which directories changed since the last walk (Linux);
	// nil while the tree is walked whole.
	watch *watcher
	// rules is what the ignore rules above the root were read from at the
	// last whole walk; the events do not see them change.
	rules rulesStamp
	// noEvents: events were given up for this tree (and it was said in
	// the log); every refresh walks.
	noEvents bool
	// dropped: the Tracker no longer keeps the tree (its session closed,
	// or it was the least recently used); a command still ending walks
	// it without a watcher, which nobody would close.
	dropped bool
}

func newTree(root string, opts Options, global []gitignore.Pattern) *tree {
	return &tree{root: root, opts: opts, global: global}
}

// begin returns the latest snapshot, walking the tree first only if it has
// none, and counts a command as open.
func (tr *tree) begin() (*snapshot, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	cur, ok := tr.cur, tr.cur != nil
	if !ok {
		cur, ok = tr.refreshLocked()
	}
	if ok {
		tr.open++
	}
	return cur, ok
}

// drop closes the tree's watcher: the Tracker no longer keeps it.
func (tr *tree) drop() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.dropped = true
	tr.closeWatch()
}

// closeLocked counts a command as ended; once none is open, the claims
// are dropped. The caller holds tr.mu.
func (tr *tree) closeLocked() {
	tr.open--
	if tr.open <= 0 {
		tr.open, tr.claimed = 0, nil
	}
}

// end walks the tree and lists what changed since base, for a command
// that started at since.
func (tr *tree) end(base *snapshot, since int64) []Change {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	defer tr.closeLocked()
	cur, ok := tr.refreshLocked()
	if !ok {
		return nil
	}
	if tr.claimed == nil {
		tr.claimed = map[string]claim{}
	}
	return diff(tr.root, base, cur, since, tr.claimed)
}

// refreshLocked brings the latest snapshot up to date and returns it:
// with a watcher, by reading again only the directories the events name;
// else by a walk of the tree, reusing the latest snapshot's content for
// files whose stat data did not change. The caller holds tr.mu.
func (tr *tree) refreshLocked() (*snapshot, bool) {
	if tr.tooBig {
		return nil, false
	}
	if tr.cur != nil && tr.watch != nil {
		next, err := tr.update()
		if err == nil {
			tr.cur = next
			return next, true
		}
		tr.stopEvents(err)
	}
	tr.startEvents()
	next, err := tr.walk(tr.cur)
	if err != nil {
		tr.closeWatch()
		if errors.Is(err, errTooBig) {
			tr.tooBig = true
			tr.cur = nil
		}
		return nil, false
	}
	tr.cur = next
	tr.logCost()
	return next, true
}

// logCost says what the tree costs after a whole walk: the directories
// watched and the content its snapshot keeps.
func (tr *tree) logCost() {
	watches := 0
	if tr.watch != nil {
		watches = tr.watch.count()
	}
	tr.opts.Logger.Debug("tree walked", zap.String("root", tr.root), zap.Int("directories", len(tr.cur.dirs)),
		zap.Int("watches", watches), zap.Int64("content_bytes", tr.cur.kept))
}

// walker is one walk of a tree. Directories are read in parallel (stat
// calls are most of a walk's time, and they wait on the kernel, not on each
// other).
type walker struct {
	tr    *tree
	prev  *snapshot
	start time.Time
	// inRepo: the root is in a git repository, whose ignore rules apply.
	inRepo bool
	// stamp is what the rules above the root were read from.
	stamp rulesStamp
	group errgroup.Group
	count atomic.Int64

	// kept is the content bytes the new snapshot holds so far.
	kept atomic.Int64
	// watch, when set, gets a watch on each directory the walk enters;
	// watchErr is the first error it gave (the walk goes on without).
	watch    *watcher
	watchErr atomic.Pointer[error]

	// mu guards next and toRead.
	mu   sync.Mutex
	next *snapshot
	// toRead are the files whose content is read once the walk is done:
	// a tree found too large is not read at all.
	toRead []unread
	// made are the directories this walk read (the others, in a refresh
	// from events, are the previous snapshot's).
	made []string
	// fresh are, in a refresh from events, the directories read in full
	// (new ones) or gone: what the previous snapshot held below them and
	// this walk did not read is dropped.
	fresh []string
}

// unread is a file to read after the walk (e.rel names it).
type unread struct {
	e entry
}

func (tr *tree) walk(prev *snapshot) (*snapshot, error) {
	if prev == nil {
		prev = &snapshot{}
	}
	w := tr.walker(prev, len(prev.dirs))
	domain, ignore, err := w.repoPatterns()
	if err != nil {
		return nil, err
	}
	tr.rules = w.stamp
	w.group.Go(func() error { return w.dir(tr.root, domain, "", ignore) })
	if err := w.group.Wait(); err != nil {
		return nil, err
	}
	if p := w.watchErr.Load(); p != nil {
		tr.stopEvents(*p)
	}
	w.readAll()
	return w.next, nil
}

func (tr *tree) walker(prev *snapshot, size int) *walker {
	w := &walker{tr: tr, prev: prev, next: &snapshot{dirs: make(map[string]*dirFiles, size)}, start: time.Now(), watch: tr.watch}
	w.group.SetLimit(walkers)
	return w
}

// readAll reads the files the walk found new or changed, a few at a time.
func (w *walker) readAll() {
	// By directory, each opened once below the root (see read), in
	// batches that keep the walkers busy in a directory of many files.
	byDir := map[string][]*entry{}
	for i := range w.toRead {
		e := &w.toRead[i].e
		byDir[parentOf(e.rel)] = append(byDir[parentOf(e.rel)], e)
	}
	var g errgroup.Group
	g.SetLimit(walkers)
	for dir, es := range byDir {
		for batch := range slices.Chunk(es, readBatch) {
			g.Go(func() error {
				w.readIn(dir, batch)
				return nil
			})
		}
	}
	_ = g.Wait()
	for _, u := range w.toRead {
		w.next.dirs[parentOf(u.e.rel)].files[u.e.rel] = u.e
	}
	for _, rel := range w.made {
		d := w.next.dirs[rel]
		for _, e := range d.files {
			if e.known {
				d.kept += e.size
			}
		}
	}
	w.next.kept = w.kept.Load()
}

// walkers is how many directories one walk reads at once.
const walkers = 4

// repoPatterns finds the repository holding the root and loads the ignore
// rules that apply above it: the global excludes, .git/info/exclude and
// each .gitignore from the repository's top down to the root's parent. It
// returns the root's path within the repository and those rules.
func (w *walker) repoPatterns() ([]string, []gitignore.Pattern, error) {
	root := w.tr.root
	if fi, err := os.Stat(root); err != nil {
		return nil, nil, fmt.Errorf("changes: %w", err)
	} else if !fi.IsDir() {
		return nil, nil, fmt.Errorf("changes: %s is not a directory", root)
	}
	top := repo.Top(root)
	w.stamp = stampRules(top)
	if top == "" {
		return nil, nil, nil
	}
	w.inRepo = true
	parts, ignore := repo.Above(top, root, w.tr.global)
	return parts, ignore, nil
}

// dir walks one directory and everything below it: abs on disk, domain
// its path in the repository (for the ignore rules), rel its path below
// the root ("" for the root), ignore the rules of the directories above it.
// Subdirectories go to other goroutines while there are free ones.
func (w *walker) dir(abs string, domain []string, rel string, ignore []gitignore.Pattern) error {
	_, err := w.scan(&dirScan{abs: abs, domain: domain, rel: rel, ignore: ignore})
	return err
}

// dirScan is one directory being read.
type dirScan struct {
	abs, rel string
	domain   []string
	ignore   []gitignore.Pattern
	// shallow: the directory is read again after an event, its watched
	// subdirectories are not entered (their files did not change), and
	// it is watched already.
	shallow bool

	match gitignore.Matcher
	dirfd int
	// scratch is a file's path in the repository, for the matcher: one
	// slice per directory, not one per file.
	scratch []string
	key     []byte
	batch   []entry
	reads   []unread
	// subdirs are the names of the subdirectories measured.
	subdirs []string
	// mtime and ctime are the directory's own.
	mtime, ctime int64
}

// scan reads one directory's entries: files into the new snapshot (or the
// list to read), subdirectories walked. It returns the names of the
// subdirectories it measured.
func (w *walker) scan(s *dirScan) ([]string, error) {
	if w.watch != nil && !s.shallow {
		// Watched before it is read: a change made after the read is an
		// event, one made before it is in the read.
		w.watchDir(s)
	}
	// Below the root, opened from it with no link on the way: a command
	// renaming a link over a directory between its parent's listing and
	// this read must not have the walk list (and read) what it links to.
	var d *os.File
	var err error
	if s.rel == "" {
		d, err = os.Open(s.abs)
	} else {
		d, err = untrusted.OpenDirIn(w.tr.root, filepath.FromSlash(s.rel), untrusted.NoLinks)
	}
	var ents []os.DirEntry
	if err == nil {
		defer d.Close()
		ents, err = d.ReadDir(-1)
	}
	if err != nil {
		if s.rel == "" {
			return nil, fmt.Errorf("changes: read %s: %w", s.abs, err)
		}
		// A directory the agent cannot read is not measured; the rest is.
		return nil, nil
	}
	s.dirfd = int(d.Fd())
	s.mtime, s.ctime = dirStamp(s.dirfd)
	if w.count.Add(int64(len(ents))) > int64(w.tr.opts.MaxFiles) {
		return nil, errTooBig
	}
	w.rules(s, ents)
	s.scratch = make([]string, len(s.domain)+1)
	copy(s.scratch, s.domain)
	s.batch = make([]entry, 0, len(ents))
	defer func() { w.keepAll(s, s.batch, s.reads) }()
	for _, de := range ents {
		if err := w.visit(s, de); err != nil {
			return nil, err
		}
	}
	return s.subdirs, nil
}

// rules sets the matcher of a directory in a repository: the rules above
// it plus its own .gitignore.
func (w *walker) rules(s *dirScan, ents []os.DirEntry) {
	if !w.inRepo {
		return
	}
	ignore := s.ignore
	if slices.ContainsFunc(ents, func(de os.DirEntry) bool { return de.Name() == ".gitignore" && de.Type().IsRegular() }) {
		ignore = append(ignore[:len(ignore):len(ignore)], repo.ReadPatternsIn(w.tr.root, filepath.Join(filepath.FromSlash(s.rel), ".gitignore"), s.domain)...)
	}
	s.ignore, s.match = ignore, gitignore.NewMatcher(ignore)
}

// visit measures one entry of a directory: a file is kept or listed to
// read, a subdirectory walked (unless it is watched and the scan shallow).
func (w *walker) visit(s *dirScan, de os.DirEntry) error {
	name := de.Name()
	if name == ".git" {
		return nil
	}
	isDir := de.IsDir()
	s.scratch[len(s.domain)] = name
	if s.match != nil && s.match.Match(s.scratch, isDir) {
		return nil
	}
	s.key = append(s.key[:0], s.rel...)
	if s.rel != "" {
		s.key = append(s.key, '/')
	}
	s.key = append(s.key, name...)
	switch {
	case isDir:
		s.subdirs = append(s.subdirs, name)
		childRel := string(s.key)
		if s.shallow {
			if w.watch.watched(childRel) {
				return nil
			}
			// New, or made again since it was watched: walked afresh, and
			// what was below that path before is forgotten.
			w.reset(childRel)
		}
		path := append(s.domain[:len(s.domain):len(s.domain)], name)
		childAbs, ignore := filepath.Join(s.abs, name), s.ignore
		sub := func() error { return w.dir(childAbs, path, childRel, ignore) }
		if !w.group.TryGo(sub) {
			return sub()
		}
	case de.Type().IsRegular():
		if e, err := statAt(s.dirfd, name); err == nil && e.regular {
			if e, same := w.file(s.key, e); same {
				s.batch = append(s.batch, e)
			} else {
				s.reads = append(s.reads, unread{e: e})
			}
		}
	}
	return nil
}

// file looks a regular file up in the previous snapshot: same reports
// whether its entry there still holds (its stat data did not change, and it
// was not read too close to its mtime); if not, e is to be read.
func (w *walker) file(key []byte, e entry) (_ entry, same bool) {
	// The previous snapshot's key string is reused: no allocation for a
	// file that did not change.
	p, ok := w.prev.lookup(key)
	if ok && p.sameStat(e) && !p.racy && w.fits(p) {
		p.ctime = e.ctime
		return p, true
	}
	e.rel = p.rel
	if !ok {
		e.rel = string(key)
	}
	e.racy = w.start.UnixNano()-e.mtime < int64(racyWindow)
	return e, false
}

// fits counts e's content against the budget, if it has any, and reports
// whether it fit.
func (w *walker) fits(e entry) bool {
	if !e.known {
		return true
	}
	if w.kept.Add(e.size) > w.tr.opts.ContentBudget {
		w.kept.Add(-e.size)
		return false
	}
	return true
}

// keepAll adds one directory's files to the new snapshot, and those to
// read to the list, under one lock.
func (w *walker) keepAll(s *dirScan, es []entry, reads []unread) {
	rel := s.rel
	d := &dirFiles{files: make(map[string]entry, len(es)+len(reads)), mtime: s.mtime, ctime: s.ctime}
	for _, e := range es {
		d.files[e.rel] = e
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next.dirs[rel] = d
	w.made = append(w.made, rel)
	w.toRead = append(w.toRead, reads...)
}

// readBatch is how many files of one directory one walker reads.
const readBatch = 64

// readIn reads the files es of the directory rel below the root. Listed as
// regular files, but a command may have renamed a FIFO, or a link to a
// file the sandbox denies (the stored key, another session's log), over
// one since, or a link over a directory above them: the walk must neither
// block nor put that file in the diffs and the session log. The directory
// is opened from the root with no link on the way, each file in it with
// none, and the stat data kept are those of the file opened.
func (w *walker) readIn(rel string, es []*entry) {
	d, err := untrusted.OpenDirIn(w.tr.root, filepath.FromSlash(rel), untrusted.NoLinks)
	if err != nil {
		return
	}
	defer d.Close()
	for _, e := range es {
		f, err := untrusted.OpenAt(d, path.Base(e.rel))
		if err != nil {
			continue
		}
		w.read(f, e)
		f.Close()
	}
}

// read fills e's content from f: the whole text of a small text file, else
// whether the file's head looks binary. A file past the content budget is
// read again here, and keeps only its stat data.
func (w *walker) read(f *os.File, e *entry) {
	if st, err := statFile(f); err == nil {
		st.rel, st.racy = e.rel, e.racy
		*e = st
	}
	if e.size > MaxTextSize || w.kept.Load()+e.size > w.tr.opts.ContentBudget {
		head := make([]byte, headSize)
		n, _ := io.ReadFull(f, head)
		e.binary = bytes.IndexByte(head[:n], 0) >= 0
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTextSize+1))
	if err != nil {
		return
	}
	e.size = int64(len(data))
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		e.binary = true
		return
	}
	if e.size > MaxTextSize {
		return
	}
	e.known, e.text = true, string(data)
	if !w.fits(*e) {
		e.known, e.text = false, ""
	}
}

func join(root, rel string) string {
	return filepath.Join(root, filepath.FromSlash(rel))
}
