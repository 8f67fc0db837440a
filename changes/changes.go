// Package changes measures what a command changed in a directory tree: it
// keeps, per session, a snapshot of the tree (each file's stat data, and the
// content of small text files) between commands, and compares a fresh walk
// with it when a command ends. It measures the files where they are, from
// the agent's side, so it works the same whatever ran the command (unconfined,
// in the sandbox, in a container with the tree mounted at the same path).
//
// A walk skips .git and what git ignores (the repository's .gitignore files,
// .git/info/exclude and the user's global excludes), so node_modules and build
// output cost nothing. It reads only files whose stat data changed, so a
// command that changes little costs one walk of stat calls, not a read of the
// project.
package changes

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/repo"
)

// Defaults of Options.
const (
	// DefaultMaxFiles is the most entries a tree may hold; beyond it the
	// tree is not measured at all (a cwd of $HOME or /).
	DefaultMaxFiles = 100_000
	// DefaultContentBudget is how many bytes of file content one tree keeps.
	DefaultContentBudget = 64 << 20
	// DefaultMaxTrees is how many sessions' snapshots are kept; the least
	// recently used one is dropped past it (its next command walks afresh).
	DefaultMaxTrees = 16
	// MaxTextSize is the largest file whose content is kept and diffed.
	MaxTextSize = 256 << 10
)

// Options configures a Tracker. Zero fields take the defaults above.
type Options struct {
	// MaxFiles is the most files and directories a tree may hold.
	MaxFiles int
	// ContentBudget is the bytes of file content kept per tree; a file past
	// it is tracked by its stat data alone (its change shows sizes).
	ContentBudget int64
	// MaxTrees is how many trees (sessions) are kept between commands.
	MaxTrees int
	// Home is the user's home directory, for the global excludes file
	// (core.excludesFile, else $XDG_CONFIG_HOME/git/ignore); empty means
	// none are read.
	Home string
	// XDGConfigHome is $XDG_CONFIG_HOME; empty means Home/.config.
	XDGConfigHome string
	// NoEvents walks the whole tree after every command, without
	// file-system events: for files the commands change through another
	// kernel (a remote engine's host sharing the tree), whose writes raise
	// no event here. On Linux the default is to use inotify where the
	// root's file system is local; elsewhere trees are always walked.
	NoEvents bool
	// MaxWatches is the most directories one tree watches; past it the
	// tree is walked.
	MaxWatches int
	// Logger says when a tree gives events up; nil means no log.
	Logger *zap.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.ContentBudget <= 0 {
		o.ContentBudget = DefaultContentBudget
	}
	if o.MaxTrees <= 0 {
		o.MaxTrees = DefaultMaxTrees
	}
	if o.MaxWatches <= 0 {
		o.MaxWatches = DefaultMaxWatches
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// Op is what happened to a file.
type Op int

const (
	Created Op = iota + 1
	Modified
	Deleted
)

func (o Op) String() string {
	switch o {
	case Created:
		return "created"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

// Side is a file on one side of a change.
type Side struct {
	// Size in bytes.
	Size int64
	// Text is the content, when Known.
	Text string
	// Known: Text holds the whole content, a valid UTF-8 text file of at
	// most MaxTextSize bytes.
	Known bool
	// Binary: the file's head holds a NUL byte or is not UTF-8.
	Binary bool
}

// Change is one file a command changed.
type Change struct {
	// Path is absolute.
	Path string
	Op   Op
	// Old is the file before (zero for Created); New after (zero for
	// Deleted).
	Old, New Side
}

// Tracker keeps one snapshot per key (a session and its directory) and
// measures commands against it. Safe for concurrent use.
type Tracker struct {
	opts   Options
	global []gitignore.Pattern

	// mu guards trees and clock.
	mu    sync.Mutex
	trees map[Key]*tree
	clock uint64
}

// Key names a tree: a session's directory. Two sessions in one directory
// keep their own snapshots, so one's commands are never attributed to the
// other's.
type Key struct {
	Session string
	Root    string
}

// New returns a Tracker.
func New(opts Options) *Tracker {
	opts = opts.withDefaults()
	return &Tracker{opts: opts, global: repo.UserExcludes(opts.Home, opts.XDGConfigHome), trees: map[Key]*tree{}}
}

// Begin returns a Mark to End when the command that is about to start
// ends. It walks the tree only the first time (a session's first command);
// after that the snapshot the last command's End made is the baseline, and
// what someone else changed in between is told apart by its ctime (see
// End). It returns nil when the tree cannot be measured (it does not exist,
// or is too large).
func (t *Tracker) Begin(k Key) *Mark {
	start := time.Now()
	tr, evicted := t.tree(k)
	if evicted != nil {
		evicted.drop()
	}
	base, ok := tr.begin()
	if !ok {
		return nil
	}
	return &Mark{tree: tr, base: base, start: start}
}

// Forget drops every snapshot of session (it closed), and closes their
// watchers.
func (t *Tracker) Forget(session string) {
	t.forget(func(k Key) bool { return k.Session == session })
}

// Close drops every snapshot and closes their watchers.
func (t *Tracker) Close() {
	t.forget(func(Key) bool { return true })
}

func (t *Tracker) forget(match func(Key) bool) {
	var gone []*tree
	t.mu.Lock()
	for k, tr := range t.trees {
		if match(k) {
			delete(t.trees, k)
			gone = append(gone, tr)
		}
	}
	t.mu.Unlock()
	// Outside t.mu: a tree's lock may wait for a walk, which must not hold
	// up the other sessions' commands.
	for _, tr := range gone {
		tr.drop()
	}
}

// tree returns the key's tree, making it if needed; past MaxTrees the
// least recently used one is no longer kept, and returned for the caller
// to drop.
func (t *Tracker) tree(k Key) (tr, evicted *tree) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	if tr, ok := t.trees[k]; ok {
		tr.used = t.clock
		return tr, nil
	}
	if len(t.trees) >= t.opts.MaxTrees {
		var oldest Key
		for key, tr := range t.trees {
			if evicted == nil || tr.used < evicted.used {
				oldest, evicted = key, tr
			}
		}
		delete(t.trees, oldest)
	}
	tr = newTree(k.Root, t.opts, t.global)
	tr.used = t.clock
	t.trees[k] = tr
	return tr, evicted
}

// Mark is a tree's state before a command; with more (BeginAll), the
// state of each of a session's trees.
type Mark struct {
	tree  *tree
	base  *snapshot
	start time.Time
	// more are the Marks of a session's trees, one each (BeginAll); the
	// Mark itself then has no tree.
	more []*Mark
}

// clockSlack is how far before Begin a file's ctime must be for the change
// to be ruled out as the command's: the kernel stamps files from a coarse
// clock (a tick of up to 10ms), so a write just after Begin may carry a
// ctime slightly before it.
const clockSlack = 20 * time.Millisecond

// End walks the tree and returns what changed since Begin, sorted by path.
// A file whose ctime is before Begin was changed by someone else (the user
// in the editor, between two commands): it is not the command's, and its
// content becomes the baseline of the next. Call End once, when the command
// has ended; a nil Mark returns nil.
func (m *Mark) End() []Change {
	if m == nil {
		return nil
	}
	if len(m.more) > 0 {
		return m.endAll()
	}
	return m.tree.end(m.base, m.start.Add(-clockSlack).UnixNano())
}

// Discard ends a Mark without measuring: the command never ran. A nil
// Mark does nothing.
func (m *Mark) Discard() {
	if m == nil {
		return
	}
	for _, x := range m.more {
		x.Discard()
	}
	if m.tree == nil {
		return
	}
	m.tree.mu.Lock()
	defer m.tree.mu.Unlock()
	m.tree.closeLocked()
}

// claim is what a command that ended reported of a file: the version it
// saw, or that the file was deleted.
type claim struct {
	deleted bool
	seen    entry
}

// covers reports whether the file, now a, is the version the claim
// reported, or that version touched since: the same bytes with a newer
// ctime. A tool that writes a file in two steps (touch: create, then set
// the times) can be seen by a command that ends between them; the second
// step is no new change to report. When the bytes are not kept, only the
// same stat data tells it is the same version.
func (c claim) covers(a entry) bool {
	return !c.deleted && (c.seen.ctime == a.ctime || c.seen.sameVersion(a))
}

// diff lists the files that differ between two snapshots of root, leaving
// out the created and changed ones whose ctime is before since, and those
// whose same version was already claimed by another command that ended in
// the meantime. It claims what it lists. A
// directory both snapshots share did not change.
func diff(root string, before, after *snapshot, since int64, claimed map[string]claim) []Change {
	var out []Change
	gone := goneInodes(before, after)
	for dir, a := range after.dirs {
		if b := before.dirs[dir]; a != b {
			dirSince := since
			if b == nil && movedIn(dir, before, after, since) {
				// Its files keep the ctimes they had where they were.
				dirSince = math.MinInt64
			}
			out = changedIn(out, root, b, a, dirSince, gone, claimed)
		}
	}
	for dir, b := range before.dirs {
		if a := after.dirs[dir]; a != b {
			out = deletedFrom(out, root, b, a, claimed)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// movedIn reports whether the new directory dir came with a move the
// command made (a rename into or within the tree): it, or the new directory
// above it that holds it, was renamed since the command started — its ctime
// is new — and nothing was made in it since — its mtime is old. A directory
// someone else made before the command, and the command only wrote in, has
// a new mtime too: its older files are not the command's.
func movedIn(dir string, before, after *snapshot, since int64) bool {
	for {
		if a := after.dirs[dir]; a != nil && a.ctime >= since && a.mtime != 0 && a.mtime < since {
			return true
		}
		if dir == "" {
			return false
		}
		dir = parentOf(dir)
		if before.dirs[dir] != nil {
			return false // the directory above existed: dir was not moved with it
		}
	}
}

// goneInodes are the inodes of the files that left their path between the
// snapshots. A file at a new path with one of them was moved there (with
// its directory: its own ctime is old) by the command, which moved it away
// from where it was shown deleted.
func goneInodes(before, after *snapshot) map[uint64]bool {
	gone := map[uint64]bool{}
	for dir, b := range before.dirs {
		a := after.dirs[dir]
		if a == b {
			continue
		}
		for rel, e := range b.files {
			if _, ok := a.get(rel); !ok {
				gone[e.ino] = true
			}
		}
	}
	return gone
}

// changedIn appends the files of a directory created or changed from
// before (nil: the directory is new) to after; gone are the inodes that
// left their path (see goneInodes).
func changedIn(out []Change, root string, before, after *dirFiles, since int64, gone map[uint64]bool, claimed map[string]claim) []Change {
	for rel, a := range after.files {
		if c, done := claimed[rel]; done && c.covers(a) {
			continue
		}
		b, ok := before.get(rel)
		fileSince := since
		if !ok && gone[a.ino] {
			fileSince = math.MinInt64
		}
		ch, changed := change(b, ok, a, fileSince)
		if !changed {
			continue
		}
		ch.Path = join(root, rel)
		claimed[rel] = claim{seen: a}
		out = append(out, ch)
	}
	return out
}

// deletedFrom appends the files of a directory that are no longer in
// after (nil: the directory is gone).
func deletedFrom(out []Change, root string, before, after *dirFiles, claimed map[string]claim) []Change {
	for rel, b := range before.files {
		if _, ok := after.get(rel); ok {
			continue
		}
		if c, done := claimed[rel]; done && c.deleted {
			continue
		}
		claimed[rel] = claim{deleted: true}
		out = append(out, Change{Path: join(root, rel), Op: Deleted, Old: b.side()})
	}
	return out
}

// change is what became of a file that is in the new snapshot as a (and
// in the old one as b, if existed), when the command started at since
// did it.
func change(b entry, existed bool, a entry, since int64) (Change, bool) {
	switch {
	case a.ctime < since:
		// Not changed since the command started.
		return Change{}, false
	case !existed:
		return Change{Op: Created, New: a.side()}, true
	case b.sameVersion(a):
		// Unchanged, touched, or rewritten with the same bytes.
		return Change{}, false
	}
	return Change{Op: Modified, Old: b.side(), New: a.side()}, true
}
