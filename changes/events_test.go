package changes_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/changes"
)

// Two sessions in one tree, one measuring by events and one by walking,
// see the same changes for every kind of command, directories included:
// each has its own view, and the events miss nothing the walk finds.
func TestEventsSeeWhatTheWalkSees(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	run(t, root, "git init -q")
	write(t, filepath.Join(root, ".gitignore"), "*.log\n")
	write(t, filepath.Join(root, "a.txt"), "one\n")
	write(t, filepath.Join(root, "d", "e", "deep.txt"), "deep\n")
	write(t, filepath.Join(root, "moved", "m.txt"), "m\n")
	write(t, filepath.Join(root, "away", "w.txt"), "w\n")
	write(t, filepath.Join(root, "again", "sub", "old.txt"), "old\n")
	write(t, filepath.Join(root, "again", "gone", "g.txt"), "g\n")
	outside := t.TempDir()
	write(t, filepath.Join(outside, "in", "x", "y.txt"), "y\n")
	core, logs := observer.New(zap.InfoLevel)
	events := changes.New(changes.Options{Logger: zap.New(core)})
	walk := changes.New(changes.Options{NoEvents: true})
	defer events.Close()
	cases := []struct {
		name, command string
		want          []string
	}{
		{"first", "true", nil},
		{"edit", "sed -i 's/one/1/' a.txt", []string{`modified a.txt old="one\n" new="1\n"`}},
		{"new tree", "mkdir -p n/o && echo p > n/o/p.txt && echo q > n/q.txt", []string{`created n/o/p.txt new="p\n"`, `created n/q.txt new="q\n"`}},
		{"in a new tree", "echo r > n/o/r.txt", []string{`created n/o/r.txt new="r\n"`}},
		{"deep edit", "echo deeper >> d/e/deep.txt", []string{`modified d/e/deep.txt old="deep\n" new="deep\ndeeper\n"`}},
		// A moved directory's files keep their ctime (from before the
		// command); the directory's new ctime and old mtime say it moved.
		{"move within", "mv moved d/e/moved", []string{`created d/e/moved/m.txt new="m\n"`, `deleted moved/m.txt old="m\n"`}},
		{"edit after the move", "echo m2 > d/e/moved/m.txt", []string{`modified d/e/moved/m.txt old="m\n" new="m2\n"`}},
		{"move out", "mv away " + outside + "/away", []string{`deleted away/w.txt old="w\n"`}},
		{"outside is not watched", "echo z > " + outside + "/away/w.txt", nil},
		{"move in", "mv " + outside + "/in in", []string{`created in/x/y.txt new="y\n"`}},
		{"edit what moved in", "echo y2 > in/x/y.txt", []string{`modified in/x/y.txt old="y\n" new="y2\n"`}},
		// Moved, then written in: the move's files are known by their
		// inodes, gone from where they were.
		{"move and write", "mv in/x in/w && echo v > in/w/v.txt", []string{`created in/w/v.txt new="v\n"`, `created in/w/y.txt new="y2\n"`, `deleted in/x/y.txt old="y2\n"`}},
		{"remove a tree", "rm -rf d", []string{`deleted d/e/deep.txt old="deep\ndeeper\n"`, `deleted d/e/moved/m.txt old="m2\n"`}},
		{"ignored", "echo l > n/o/x.log", nil},
		{"made again", "rm -rf again && mkdir -p again/sub && echo new > again/sub/new.txt", []string{`deleted again/gone/g.txt old="g\n"`,
			`created again/sub/new.txt new="new\n"`, `deleted again/sub/old.txt old="old\n"`}},
		{"in what was made again", "echo newer > again/sub/new.txt && mkdir again/gone", []string{`modified again/sub/new.txt old="new\n" new="newer\n"`}},
		{"in what was made again, deeper", "echo g2 > again/gone/g.txt", []string{`created again/gone/g.txt new="g2\n"`}},
		// Files a new rule ignores leave the measured tree.
		{"rules change", "echo '*.txt' > n/.gitignore && echo s > n/s.md", []string{`created n/.gitignore new="*.txt\n"`,
			`deleted n/o/p.txt old="p\n"`, `deleted n/o/r.txt old="r\n"`, `deleted n/q.txt old="q\n"`, `created n/s.md new="s\n"`}},
		{"after the rules change", "echo s2 > n/s.md && echo t > n/t.txt", []string{`modified n/s.md old="s\n" new="s2\n"`}},
		{"nothing", "cat a.txt >/dev/null", nil},
	}
	// Files whose last change must be clearly older than a case's start,
	// or their own ctime would make them the case's.
	settled := map[string]string{"move and write": "in/x/y.txt"}
	for _, c := range cases {
		if p := settled[c.name]; p != "" {
			settle(t, filepath.Join(root, p))
		}
		me := events.Begin(changes.Key{Session: "events", Root: root})
		mw := walk.Begin(changes.Key{Session: "walk", Root: root})
		run(t, root, c.command)
		for _, m := range []struct {
			name string
			cs   []changes.Change
		}{{"events", me.End()}, {"walk", mw.End()}} {
			var got []string
			for _, ch := range m.cs {
				got = append(got, summary(root, ch))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s, %s: got\n%s\nwant\n%s", c.name, m.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		}
	}
	if n := logs.FilterMessageSnippet("no file-system events").Len(); runtime.GOOS == "linux" && n != 0 {
		t.Errorf("events were given up on Linux: %v", logs.All())
	}
}

// Past MaxWatches a tree is walked: its changes are still found.
func TestTooManyWatches(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "a", "a.txt"), "a\n")
	write(t, filepath.Join(root, "b", "b.txt"), "b\n")
	core, logs := observer.New(zap.InfoLevel)
	tr := changes.New(changes.Options{MaxWatches: 2, Logger: zap.New(core)})
	defer tr.Close()
	for _, c := range []struct{ command, want string }{
		{"true", ""},
		{"echo b2 > b/b.txt", `modified b/b.txt old="b\n" new="b2\n"`},
		{"mkdir c && echo c > c/c.txt", `created c/c.txt new="c\n"`},
	} {
		if got := strings.Join(measure(t, tr, root, c.command), "\n"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.command, got, c.want)
		}
	}
	// Said once, not at every command.
	if n := logs.FilterMessageSnippet("no file-system events").Len(); runtime.GOOS == "linux" && n != 1 {
		t.Errorf("%d logs of the fallback, want 1: %v", n, logs.All())
	}
}

// A session's watcher is one inotify descriptor, closed when the session
// is forgotten. Not parallel: it counts the process's descriptors.
func TestWatcherClosedOnForget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "f.txt"), "f\n")
	before := inotifyFDs(t)
	tr := changes.New(changes.Options{})
	for _, s := range []string{"one", "two"} {
		m := tr.Begin(changes.Key{Session: s, Root: root})
		run(t, root, "echo "+s+" > sub/"+s+".txt")
		if cs := m.End(); len(cs) != 1 {
			t.Fatalf("session %s: %d changes, want 1 (its own)", s, len(cs))
		}
	}
	if got := inotifyFDs(t); got != before+2 {
		t.Fatalf("%d inotify descriptors with two sessions, want %d", got, before+2)
	}
	tr.Forget("one")
	if got := inotifyFDs(t); got != before+1 {
		t.Errorf("%d inotify descriptors after one session closed, want %d", got, before+1)
	}
	tr.Close()
	if got := inotifyFDs(t); got != before {
		t.Errorf("%d inotify descriptors after Close, want %d", got, before)
	}
}

func inotifyFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// settle returns once path's last change is clearly in the past: the clock
// is polled past its mtime, so a command started now finds it older than
// its own start.
func settle(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for !fi.ModTime().Add(100 * time.Millisecond).Before(time.Now()) {
		runtime.Gosched()
	}
}
