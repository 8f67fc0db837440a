package changes_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/changes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a shell command in dir, as a command of the agent would.
func run(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// summary is a change in one line: op, path below root, and the texts.
func summary(root string, c changes.Change) string {
	rel, _ := filepath.Rel(root, c.Path)
	s := c.Op.String() + " " + rel
	if c.Old.Known {
		s += " old=" + strconvQuote(c.Old.Text)
	}
	if c.New.Known {
		s += " new=" + strconvQuote(c.New.Text)
	}
	if c.Old.Binary || c.New.Binary {
		s += " binary"
	}
	return s
}

func strconvQuote(s string) string { return "\"" + strings.ReplaceAll(s, "\n", `\n`) + "\"" }

func measure(t *testing.T, tr *changes.Tracker, root, command string) []string {
	t.Helper()
	m := tr.Begin(changes.Key{Session: "s", Root: root})
	if m == nil {
		t.Fatalf("Begin(%s) = nil", root)
	}
	run(t, root, command)
	var out []string
	for _, c := range m.End() {
		out = append(out, summary(root, c))
	}
	return out
}

func TestChanges(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(root, "gone.txt"), "bye\n")
	write(t, filepath.Join(root, "old-name.txt"), "moving\n")
	write(t, filepath.Join(root, "sub", "same.txt"), "same\n")
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)

	cases := []struct {
		name, command string
		want          []string
	}{
		{"sed -i", "sed -i 's/two/2/' a.txt", []string{`modified a.txt old="one\ntwo\nthree\n" new="one\n2\nthree\n"`}},
		{"new file", "printf 'fresh\\n' > sub/new.txt", []string{`created sub/new.txt new="fresh\n"`}},
		{"deleted", "rm gone.txt", []string{`deleted gone.txt old="bye\n"`}},
		{"rename", "mv old-name.txt new-name.txt", []string{`created new-name.txt new="moving\n"`, `deleted old-name.txt old="moving\n"`}},
		{"binary", "printf 'a\\0b' > bin.dat", []string{`created bin.dat binary`}},
		{"nothing", "cat a.txt >/dev/null; touch sub/same.txt", nil},
		{".git is not shown", "mkdir -p .git && echo x > .git/HEAD-ish", nil},
	}
	for _, c := range cases {
		got := measure(t, tr, root, c.command)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

func TestIgnored(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	run(t, root, "git init -q")
	write(t, filepath.Join(root, ".gitignore"), "node_modules/\n*.log\n/build\n")
	write(t, filepath.Join(root, "src", ".gitignore"), "gen.go\n")
	write(t, filepath.Join(root, "src", "main.go"), "package main\n")
	home := t.TempDir()
	write(t, filepath.Join(home, ".config", "git", "ignore"), "*.swp\n")
	tr := changes.New(changes.Options{Home: home})
	t.Cleanup(tr.Close)
	got := measure(t, tr, filepath.Join(root, "src"), "mkdir -p ../node_modules/x && echo a > ../node_modules/x/i.js && echo b > app.log && echo c > gen.go && echo d > x.swp && mkdir -p ../build && echo e > ../build/out && echo f > kept.go")
	want := []string{`created kept.go new="f\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("in src: got %q, want %q", got, want)
	}
	got = measure(t, tr, root, "echo g > node_modules/x/j.js; echo h > src/other.log; echo i > build/more; echo j > top.txt")
	want = []string{`created top.txt new="j\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("at the top: got %q, want %q", got, want)
	}
}

// An edit made between two commands (by the user, in the editor) is not
// the next command's.
func TestEditBetweenCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "user.txt"), "v1\n")
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)
	if got := measure(t, tr, root, "true"); got != nil {
		t.Fatalf("first command: %q", got)
	}
	write(t, filepath.Join(root, "user.txt"), "v2 by the user\n")
	write(t, filepath.Join(root, "user-new.txt"), "made by the user\n")
	// A directory the user made, which the command then writes in: its
	// mtime is the command's, not a move's, so its older file is not.
	write(t, filepath.Join(root, "userdir", "mine.txt"), "the user's\n")
	// The ctime of the user's writes must be clearly before the command's
	// start: wait until the clock has moved past them, by polling it (no
	// fixed sleep).
	fi, err := os.Stat(filepath.Join(root, "user-new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for !fi.ModTime().Add(100 * time.Millisecond).Before(time.Now()) {
		runtime.Gosched()
	}
	got := measure(t, tr, root, "echo cmd > cmd.txt && echo cmd > userdir/cmd.txt")
	want := []string{`created cmd.txt new="cmd\n"`, `created userdir/cmd.txt new="cmd\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	// The user's version is the baseline of the command after.
	got = measure(t, tr, root, "echo v3 > user.txt")
	want = []string{`modified user.txt old="v2 by the user\n" new="v3\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTooManyFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 5 {
		write(t, filepath.Join(root, string(rune('a'+i))), "x")
	}
	tr := changes.New(changes.Options{MaxFiles: 3})
	t.Cleanup(tr.Close)
	if m := tr.Begin(changes.Key{Session: "s", Root: root}); m != nil {
		t.Errorf("Begin on a tree past MaxFiles = %v, want nil", m)
	}
	if m := tr.Begin(changes.Key{Session: "s", Root: filepath.Join(root, "missing")}); m != nil {
		t.Errorf("Begin on a missing root = %v, want nil", m)
	}
}

// Past the content budget a file is tracked by its stat data alone: its
// change is still found, without the texts.
func TestContentBudget(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "a.txt"), "0123456789\n")
	write(t, filepath.Join(root, "b.txt"), "0123456789\n")
	tr := changes.New(changes.Options{ContentBudget: 15})
	t.Cleanup(tr.Close)
	m := tr.Begin(changes.Key{Session: "s", Root: root})
	run(t, root, "echo changed > a.txt; echo changed > b.txt")
	cs := m.End()
	if len(cs) != 2 {
		t.Fatalf("%d changes, want 2: %+v", len(cs), cs)
	}
	known := 0
	for _, c := range cs {
		if c.Op != changes.Modified {
			t.Errorf("%s: %v, want modified", c.Path, c.Op)
		}
		if c.Old.Known {
			known++
		}
	}
	if known != 1 {
		t.Errorf("%d files with a known old text, want 1 (the budget holds one)", known)
	}
}

// Two commands run side by side (a background task and a foreground one):
// the change the first to end reported is not reported again by the other,
// even when the writer was between two steps as the first ended (touch
// makes the file, then sets its times, which changes its ctime).
func TestClaimedOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)
	key := changes.Key{Session: "s", Root: root}
	task, fg := tr.Begin(key), tr.Begin(key)
	if task == nil || fg == nil {
		t.Fatal("Begin = nil")
	}
	path := filepath.Join(root, "gate")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []string
	for _, c := range task.End() {
		got = append(got, summary(root, c))
	}
	if want := `created gate new=""`; strings.Join(got, "\n") != want {
		t.Fatalf("the task ended first: got %q, want %q", got, want)
	}
	// touch's second step, a moment later.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for !time.Now().After(fi.ModTime().Add(50 * time.Millisecond)) {
		runtime.Gosched()
	}
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range fg.End() {
		got = append(got, summary(root, c))
	}
	if len(got) != 0 {
		t.Errorf("the command that ended second reported again: %q", got)
	}
}
