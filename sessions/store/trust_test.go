package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// victim is a file outside the store that a planted link points at; it
// must never change.
func victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	const content = "the user's own file\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Errorf("victim changed: %q, %v", got, err)
		}
	}
}

// A command that could create files in the sessions directory plants a
// link where the agent writes its sidecar's temporary file, and where the
// sidecar itself is; the agent's writes at the end of a turn must reach
// neither link's target.
func TestPlantedLinksNeverFollowed(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	path, check := victim(t)
	dir := filepath.Join(st.Dir(), "sessions")
	for _, name := range []string{"s1.meta.json.tmp", "s1.meta.json"} {
		os.Remove(filepath.Join(dir, name))
		if err := os.Symlink(path, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sess.Append(store.Title{Title: "after the links"}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	check()
	// The sidecar is a file of the store again, not the link.
	if fi, err := os.Lstat(filepath.Join(dir, "s1.meta.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("sidecar: %v, %v", fi, err)
	}
	page, err := st.List(store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != "after the links" {
		t.Errorf("list = %+v, %v", page, err)
	}

	// Reopening, with the link planted again, leaves the victim alone too.
	os.Remove(filepath.Join(dir, "s1.meta.json.tmp"))
	if err := os.Symlink(path, filepath.Join(dir, "s1.meta.json.tmp")); err != nil {
		t.Fatal(err)
	}
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	check()
	if err := st.Delete("s1"); err != nil {
		t.Fatal(err)
	}
	check()
}

// The log itself replaced by a link to a session file elsewhere is not
// opened, listed or deleted through.
func TestLogLinkRefused(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	other, _ := newStore(t)
	sess, err := other.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	target := filepath.Join(other.Dir(), "sessions", "s1.jsonl")
	before, _ := os.ReadFile(target)
	dir := filepath.Join(st.Dir(), "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "s1.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open("s1"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("open through a link: %v, want ErrForeign", err)
	}
	if err := st.Delete("s1"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("delete through a link: %v, want ErrForeign", err)
	}
	if page, err := st.List(store.ListOptions{}); err != nil || len(page.Sessions) != 0 {
		t.Errorf("list = %+v, %v", page, err)
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Errorf("linked log changed:\n%s\n%s", before, after)
	}
}

// A FIFO named like a session file would block open(2) for ever: list,
// open and delete must answer at once. (Without the fix this test hangs
// until its deadline.)
func TestFIFONeverBlocks(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("good", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	dir := filepath.Join(st.Dir(), "sessions")
	for _, name := range []string{"fifo.jsonl", "good.meta.json"} {
		os.Remove(filepath.Join(dir, name))
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	page, err := st.List(store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "good" {
		t.Errorf("list = %+v, %v", page, err)
	}
	if _, err := st.Open("fifo"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("open a FIFO: %v, want ErrForeign", err)
	}
	if err := st.Delete("fifo"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("delete a FIFO: %v, want ErrForeign", err)
	}
	if logs.FilterMessageSnippet("skipped").Len() == 0 {
		t.Errorf("no warning for the FIFO: %v", logs.All())
	}
}

// A sidecar that never ends (a link to /dev/zero, or a huge file) costs
// List a bounded read, and the log's header stands in for it.
func TestEndlessSidecarBounded(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	for _, id := range []string{"zero", "huge"} {
		sess, err := st.Create(id, "/work/"+id)
		if err != nil {
			t.Fatal(err)
		}
		sess.Close()
	}
	dir := filepath.Join(st.Dir(), "sessions")
	zero := filepath.Join(dir, "zero.meta.json")
	os.Remove(zero)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	// Sparse: 4 GiB that take no disk; read whole it would take 4 GiB of
	// memory.
	if err := os.Truncate(filepath.Join(dir, "huge.meta.json"), 4<<30); err != nil {
		t.Fatal(err)
	}
	page, err := st.List(store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range page.Sessions {
		got[s.ID] = s.Cwd
	}
	if got["zero"] != "/work/zero" || got["huge"] != "/work/huge" {
		t.Errorf("list = %+v", page.Sessions)
	}
}

// A log over the bound is refused before a byte of it is read, with an
// error that says why; it is left as it was.
func TestLogOverBoundRefused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	st, err := store.New(store.Options{Dir: dir, MaxLogBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Create("big", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	log := filepath.Join(dir, "sessions", "big.jsonl")
	// Sparse, as in the report: 8 GiB that cost no disk.
	if err := os.Truncate(log, 8<<30); err != nil {
		t.Fatal(err)
	}
	_, err = st.Open("big")
	if !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), "8.0 GiB, over the 1.0 MiB") {
		t.Fatalf("open = %v, want ErrTooLarge naming the sizes", err)
	}
	if fi, err := os.Stat(log); err != nil || fi.Size() != 8<<30 {
		t.Errorf("log touched: %v, %v", fi, err)
	}
	// The default bound refuses it too.
	st2, _ := newStoreIn(t, dir)
	if _, err := st2.Open("big"); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("open with the default bound = %v", err)
	}
}

// Lines longer than the reader's buffer load whole (the log is read a line
// at a time now).
func TestLongLinesLoad(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KiB
	for _, text := range []string{"short", long, "after"} {
		if _, err := sess.Append(store.Prompt{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var got []string
	for _, e := range sess.Entries() {
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.(store.Prompt).Text)
	}
	if len(got) != 3 || got[0] != "short" || got[1] != long || got[2] != "after" {
		t.Errorf("entries: %d, lengths %v", len(got), lens(got))
	}
	if logs.Len() != 0 {
		t.Errorf("warnings: %v", logs.All())
	}
}

func lens(ss []string) []int {
	var n []int
	for _, s := range ss {
		n = append(n, len(s))
	}
	return n
}

// The task counter's files are not followed either.
func TestTaskIDFilesNeverFollowed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	st, _ := newStoreIn(t, dir)
	if _, err := st.NextTaskIDs(1); err != nil {
		t.Fatal(err)
	}
	path, check := victim(t)
	if err := os.Symlink(path, filepath.Join(dir, "task-ids.tmp")); err != nil {
		t.Fatal(err)
	}
	if id, err := st.NextTaskIDs(1); err != nil || id != 2 {
		t.Errorf("next = %d, %v", id, err)
	}
	check()
	lock := filepath.Join(dir, "task-ids.lock")
	os.Remove(lock)
	if err := os.Symlink(path, lock); err != nil {
		t.Fatal(err)
	}
	if _, err := st.NextTaskIDs(1); err == nil {
		t.Errorf("a linked lock file was used")
	}
	check()
}

// A loaded session does not keep its log in memory once released; its
// entries still read back from the file, those appended since included.
func TestReleaseEntries(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := sess.Append(store.Prompt{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if n := len(sess.Entries()); n != 2 {
		t.Fatalf("%d entries after Open", n)
	}
	sess.ReleaseEntries()
	if sess.Entries() != nil {
		t.Errorf("entries kept after ReleaseEntries")
	}
	if _, err := sess.Append(store.Prompt{Text: "three"}); err != nil {
		t.Fatal(err)
	}
	all, err := sess.ReadEntries()
	if err != nil || len(all) != 3 {
		t.Fatalf("read back %d entries, %v; want 3", len(all), err)
	}
	if p, _ := all[2].Decode(); p.(store.Prompt).Text != "three" {
		t.Errorf("last entry read back: %+v", p)
	}
}

// An image's name in <id>.images may be anything a command planted there:
// a link to /dev/zero, a FIFO, a sparse file of gigabytes, or the whole
// directory a link elsewhere. ReadImage answers at once with an error for
// each (without the fix: a load reads /dev/zero until memory runs out, or
// blocks on the FIFO for ever), and PutImage replaces a planted name
// rather than trusting it, never writing through a link.
func TestImageFilesNeverTrusted(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	dir := filepath.Join(st.Dir(), "sessions", "s1.images")
	plant := func(data []byte, how func(path string) error) string {
		t.Helper()
		ref, err := sess.PutImage(data)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, ref)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := how(path); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	zero := plant([]byte("zero"), func(p string) error { return os.Symlink("/dev/zero", p) })
	fifo := plant([]byte("fifo"), func(p string) error { return unix.Mkfifo(p, 0o600) })
	huge := plant([]byte("huge"), func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(8 << 30)
	})
	for name, ref := range map[string]string{"/dev/zero link": zero, "FIFO": fifo, "8 GiB sparse file": huge} {
		if data, err := sess.ReadImage(ref); err == nil {
			t.Errorf("%s read as an image of %d bytes", name, len(data))
		}
	}

	// A link planted under an image's name before it is stored is
	// replaced, and its target left alone.
	path, check := victim(t)
	img := []byte("a real image")
	sum := sha256.Sum256(img)
	ref := hex.EncodeToString(sum[:])
	if err := os.Symlink(path, filepath.Join(dir, ref)); err != nil {
		t.Fatal(err)
	}
	if got, err := sess.PutImage(img); err != nil || got != ref {
		t.Fatalf("PutImage over a planted link = %q, %v", got, err)
	}
	if data, err := sess.ReadImage(ref); err != nil || string(data) != string(img) {
		t.Errorf("ReadImage = %q, %v; want the image", data, err)
	}
	check()

	// Other bytes planted under an image's name, as a regular file: not
	// read as the image, and replaced when it is stored (without the fix:
	// PutImage kept them, and every load sent them to the model).
	other := []byte("another real image")
	osum := sha256.Sum256(other)
	oref := hex.EncodeToString(osum[:])
	if err := os.WriteFile(filepath.Join(dir, oref), []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.ReadImage(oref); !errors.Is(err, store.ErrImageChanged) {
		t.Errorf("planted bytes read as the image: %v", err)
	}
	if got, err := sess.PutImage(other); err != nil || got != oref {
		t.Fatalf("PutImage over planted bytes = %q, %v", got, err)
	}
	if data, err := sess.ReadImage(oref); err != nil || string(data) != string(other) {
		t.Errorf("ReadImage = %q, %v; want the image", data, err)
	}

	// The whole directory a link: nothing read or written through it.
	elsewhere := t.TempDir()
	if err := os.Rename(dir, filepath.Join(elsewhere, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "moved"), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.ReadImage(ref); err == nil {
		t.Error("an image read through a linked images directory")
	}
	if _, err := sess.PutImage([]byte("another")); err == nil {
		t.Error("an image written through a linked images directory")
	}
	if _, err := sess.PutImage(make([]byte, store.MaxImageBytes+1)); err == nil {
		t.Error("an image over MaxImageBytes stored")
	}
}

// A directory named like a session file is not ours either: load and
// delete say so (ErrForeign), as for a link or a FIFO, and leave it.
func TestDirectoryNamedLikeLogForeign(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("good", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	dir := filepath.Join(st.Dir(), "sessions", "d.jsonl")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open("d"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("open a directory: %v, want ErrForeign", err)
	}
	if err := st.Delete("d"); !errors.Is(err, store.ErrForeign) {
		t.Errorf("delete a directory: %v, want ErrForeign", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		t.Errorf("the directory: %v, %v", fi, err)
	}
}
