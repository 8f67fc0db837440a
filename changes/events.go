package changes

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/repo"
)

// A tree with a watcher is walked whole once; after that a refresh reads
// the events queued since the last one and reads again only the
// directories they name (a new directory is watched and walked). The
// kernel queues an event as part of the write that causes it, so once a
// command has exited every event of its writes is queued: nothing is
// waited for. Events are given up for the tree (it is walked whole at
// every refresh, as where there are none) on any error: an event queue
// that overflowed or a changed .gitignore only cost one whole walk with a
// fresh watcher.

// errRewalk: the events cannot say what changed (the queue overflowed, a
// .gitignore or the root changed); one whole walk with a fresh watcher
// can.
var errRewalk = errors.New("changes: events incomplete")

// DefaultMaxWatches is how many directories one tree watches at most;
// past it the tree is walked. The watches count against the user's
// fs.inotify.max_user_watches, which the editor's own file watcher needs
// too.
const DefaultMaxWatches = 4096

// dirWatch is a watched directory: its place in the repository and the
// ignore rules above it, to read it again alone.
type dirWatch struct {
	wd     int
	domain []string
	ignore []gitignore.Pattern
}

// watcher is a tree's event source: one inotify instance, a watch per
// directory measured. Safe for concurrent use (a walk adds watches from
// several goroutines).
type watcher struct {
	fd  int
	max int
	buf []byte

	// mu guards dirs and wds.
	mu sync.Mutex
	// dirs are the watched directories by path below the root.
	dirs map[string]dirWatch
	// wds are the directories by watch descriptor. The kernel gives a
	// directory moved within the tree its old descriptor again, so a
	// descriptor may name a new path while dirs still holds the old one.
	wds map[int]string
}

// watched reports whether rel is a directory with a live watch.
func (wt *watcher) watched(rel string) bool {
	_, ok := wt.get(rel)
	return ok
}

// count is how many directories are watched.
func (wt *watcher) count() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return len(wt.wds)
}

// get is a directory with a live watch; one whose watch the kernel
// dropped (it was deleted, maybe made again) is not.
func (wt *watcher) get(rel string) (dirWatch, bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	d, ok := wt.dirs[rel]
	return d, ok && d.wd >= 0
}

// add watches the directory abs, rel below the root. A directory gone
// since it was listed is not watched, and not an error.
func (wt *watcher) add(abs, rel string, domain []string, ignore []gitignore.Pattern) error {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if len(wt.dirs) >= wt.max {
		return fmt.Errorf("changes: more than %d directories to watch", wt.max)
	}
	wd, err := addWatch(wt.fd, abs)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		// Gone, or unreadable: the walk does not measure it either. Its
		// parent's events tell when that changes.
		return nil
	}
	if err != nil {
		return fmt.Errorf("changes: watch %s: %w", abs, err)
	}
	wt.dirs[rel] = dirWatch{wd: wd, domain: domain, ignore: ignore}
	wt.wds[wd] = rel
	return nil
}

// children are the watched directories directly below rel.
func (wt *watcher) children(rel string) []string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	var out []string
	for d := range wt.dirs {
		if d != "" && parentOf(d) == rel {
			out = append(out, d)
		}
	}
	return out
}

// removeTree stops watching rel and the directories below it.
func (wt *watcher) removeTree(rel string) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	for d, w := range wt.dirs {
		if !under(d, rel) {
			continue
		}
		delete(wt.dirs, d)
		// A descriptor that now names another path (the directory moved
		// within the tree) stays.
		if wt.wds[w.wd] == d {
			delete(wt.wds, w.wd)
			rmWatch(wt.fd, w.wd)
		}
	}
}

// event is one inotify event as the watcher reads it.
type event struct {
	wd   int
	mask uint32
	name string
}

// dirty turns the queued events into the directories to read again.
func (wt *watcher) dirty() (map[string]bool, error) {
	evs, err := wt.read()
	if err != nil {
		return nil, err
	}
	wt.mu.Lock()
	defer wt.mu.Unlock()
	out := map[string]bool{}
	for _, ev := range evs {
		if err := wt.note(ev, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// note adds the directory one event names to dirty. The caller holds
// wt.mu.
func (wt *watcher) note(ev event, dirty map[string]bool) error {
	if ev.mask&evOverflow != 0 {
		return fmt.Errorf("%w: queue overflowed", errRewalk)
	}
	rel, ok := wt.wds[ev.wd]
	switch {
	case !ok:
		// A directory no longer watched.
	case ev.mask&evIgnored != 0:
		// The watch is gone (the directory was deleted). Its entry stays,
		// dead, until its parent's event (which the deletion raised too)
		// finds it gone or made again.
		delete(wt.wds, ev.wd)
		if d, ok := wt.dirs[rel]; ok && d.wd == ev.wd {
			d.wd = -1
			wt.dirs[rel] = d
		}
	case ev.mask&evSelf != 0:
		if rel == "" {
			return fmt.Errorf("%w: the root moved or was deleted", errRewalk)
		}
		dirty[parentOf(rel)] = true
	case ev.name == ".gitignore":
		return fmt.Errorf("%w: %s changed", errRewalk, filepath.Join(rel, ev.name))
	default:
		dirty[rel] = true
	}
	return nil
}

func (wt *watcher) close() {
	closeWatcher(wt.fd)
}

// rulesStamp is what the ignore rules above the root are read from: the
// repository's top and its .git/info/exclude.
type rulesStamp struct {
	top     string
	exclude entry
}

func stampRules(top string) rulesStamp {
	s := rulesStamp{top: top}
	if top != "" {
		if fi, err := os.Stat(filepath.Join(top, repo.ExcludeFile)); err == nil {
			s.exclude = entry{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		}
	}
	return s
}

// startEvents gives the tree a watcher for its next whole walk, when it
// can have one.
func (tr *tree) startEvents() {
	if tr.watch != nil || tr.noEvents || tr.dropped || tr.opts.NoEvents {
		return
	}
	fd, err := newWatcher(tr.root)
	if err != nil {
		tr.giveUp(err)
		return
	}
	tr.watch = &watcher{fd: fd, max: tr.opts.MaxWatches, buf: make([]byte, eventBuf), dirs: map[string]dirWatch{}, wds: map[int]string{}}
}

// stopEvents drops the watcher after err; unless one whole walk with a
// fresh watcher mends it, the tree is walked from now on.
func (tr *tree) stopEvents(err error) {
	tr.closeWatch()
	if errors.Is(err, errRewalk) {
		tr.opts.Logger.Debug("walking the tree once", zap.String("root", tr.root), zap.Error(err))
		return
	}
	tr.giveUp(err)
}

// giveUp walks the tree at every refresh from now on, and says so once.
func (tr *tree) giveUp(err error) {
	tr.noEvents = true
	tr.opts.Logger.Info("no file-system events; each command walks the tree", zap.String("root", tr.root), zap.Error(err))
}

func (tr *tree) closeWatch() {
	if tr.watch != nil {
		tr.watch.close()
		tr.watch = nil
	}
}

// watchDir watches the directory s before it is read; the first error
// is kept for the walk to give the events up after it.
func (w *walker) watchDir(s *dirScan) {
	if err := w.watch.add(s.abs, s.rel, s.domain, s.ignore); err != nil {
		w.watchErr.CompareAndSwap(nil, &err)
	}
}

// update is a refresh from the events: the latest snapshot with the
// directories they name read again. Without events it is the latest
// snapshot itself.
func (tr *tree) update() (*snapshot, error) {
	dirty, err := tr.watch.dirty()
	if err != nil {
		return nil, err
	}
	if len(dirty) == 0 {
		return tr.cur, nil
	}
	if stampRules(repo.Top(tr.root)) != tr.rules {
		return nil, fmt.Errorf("%w: the repository's rules changed", errRewalk)
	}
	w := tr.walker(tr.cur, len(tr.cur.dirs))
	w.inRepo = tr.rules.top != ""
	w.carry(dirty)
	// Parents first: a directory its parent's read walks in full, or
	// found gone, is not read again.
	for _, rel := range slices.Sorted(maps.Keys(dirty)) {
		if err := w.rescan(rel); err != nil {
			_ = w.group.Wait()
			return nil, err
		}
	}
	if err := w.group.Wait(); err != nil {
		return nil, err
	}
	if p := w.watchErr.Load(); p != nil {
		return nil, *p
	}
	w.readAll()
	w.drop()
	return w.next, nil
}

// carry shares the latest snapshot's directories with the new one, but
// those to read again.
func (w *walker) carry(dirty map[string]bool) {
	var kept, count int64
	for rel, d := range w.prev.dirs {
		if dirty[rel] {
			continue
		}
		w.next.dirs[rel] = d
		kept += d.kept
		count += int64(len(d.files))
	}
	w.kept.Store(kept)
	w.count.Store(count)
}

// rescan reads one watched directory again (not the watched directories
// below it) and forgets the watched subdirectories gone from it. A
// directory no longer watched was gone with its parent; one its parent's
// read reset is walked in full or gone.
func (w *walker) rescan(rel string) error {
	d, ok := w.watch.get(rel)
	if !ok || w.isFresh(rel) {
		return nil
	}
	seen, err := w.scan(&dirScan{abs: join(w.tr.root, rel), domain: d.domain, rel: rel, ignore: d.ignore, shallow: true})
	if err != nil {
		return err
	}
	for _, child := range w.watch.children(rel) {
		if !slices.Contains(seen, child[strings.LastIndexByte(child, '/')+1:]) {
			w.reset(child)
		}
	}
	return nil
}

// reset forgets what was below rel: its watches now, its files and
// directories of the previous snapshot when the refresh is done (drop).
func (w *walker) reset(rel string) {
	w.watch.removeTree(rel)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fresh = append(w.fresh, rel)
}

// isFresh reports whether rel is at or below a directory reset by this
// refresh: walked in full (maybe still being walked), or gone.
func (w *walker) isFresh(rel string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.fresh, func(f string) bool { return under(rel, f) })
}

// under reports whether rel is dir or below it.
func under(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

// drop removes from the new snapshot the previous snapshot's directories
// below those reset, but those this walk read.
func (w *walker) drop() {
	if len(w.fresh) == 0 {
		return
	}
	made := map[string]bool{}
	for _, rel := range w.made {
		made[rel] = true
	}
	for rel, d := range w.next.dirs {
		if made[rel] {
			continue
		}
		for _, f := range w.fresh {
			if under(rel, f) {
				delete(w.next.dirs, rel)
				w.next.kept -= d.kept
				break
			}
		}
	}
}

// parentOf is the directory of a path below the root ("" for the root).
func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}
