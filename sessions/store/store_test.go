package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// clock is a fake time source that moves one second a reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// newStore is a store in a fresh temporary state dir, with a fake clock and
// the warnings it logs.
func newStore(t *testing.T) (*store.Store, *observer.ObservedLogs) {
	t.Helper()
	return newStoreIn(t, filepath.Join(t.TempDir(), "state"))
}

func newStoreIn(t *testing.T, dir string) (*store.Store, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	st, err := store.New(store.Options{Dir: dir, Logger: zap.New(core), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return st, logs
}

// allKinds is one payload of every kind.
func allKinds() []store.Payload {
	return []store.Payload{
		store.Prompt{Text: "list the files\nplease", Blocks: json.RawMessage(`[{"type":"text","text":"list the files\nplease"}]`)},
		store.Assistant{MessageID: "m1", Text: "Sure.", Reasoning: "The user wants ls.", ToolCalls: []store.ToolCall{
			{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`},
			{ID: "call_2", Name: "bash", Arguments: `{"command": "ls -la"`}, // not valid JSON: kept as is
		}},
		store.ToolResult{CallID: "call_1", Text: "a\nb\n", Title: "ls", ToolKind: "execute",
			RawInput: json.RawMessage(`{"command":"ls"}`), Status: "completed",
			Content: json.RawMessage(`[{"type":"content","content":{"type":"text","text":"a\nb\n"}}]`)},
		store.ToolResult{CallID: "call_2", Text: "invalid arguments", IsError: true, Status: "failed"},
		store.Notice{ID: "n1", State: store.NoticeQueued, Text: "task bash-1 exited with code 0"},
		store.Notice{ID: "n1", State: store.NoticeDelivered},
		store.Config{OptionID: "model", Value: "deepseek-reasoner"},
		store.Title{Title: "list the files"},
		store.Usage{Used: 1234, Size: 128000},
		store.Compaction{Summary: "The user listed files.", Replaced: 4, KeptFromSeq: 3, PreTokens: 9000, PostTokens: 800, Trigger: "manual", Focus: "files", CallID: "compact-1"},
		store.TaskStarted{ID: "bash-1", Command: "sleep 100"},
		store.TaskEnded{ID: "bash-1", State: "killed"},
		store.AlwaysAllow{Key: "ls"},
		store.Mode{Mode: "auto"},
		store.Cwd{Cwd: "/elsewhere"},
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	want := allKinds()
	for i, p := range want {
		seq, err := sess.Append(p)
		if err != nil {
			t.Fatal(err)
		}
		if seq != int64(i+1) {
			t.Errorf("seq of entry %d = %d", i, seq)
		}
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}

	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if h := sess.Header(); h.ID != "s1" || h.Cwd != "/work" || h.Version != store.Version || h.Format != store.Format || h.Created.IsZero() {
		t.Errorf("header = %+v", h)
	}
	var got []store.Payload
	for i, e := range sess.Entries() {
		if e.Seq != int64(i+1) || e.Time.IsZero() {
			t.Errorf("entry %d: seq %d time %v", i, e.Seq, e.Time)
		}
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind() != e.Kind {
			t.Errorf("entry %d: kind %s decodes as %s", i, e.Kind, p.Kind())
		}
		got = append(got, p)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-appended +loaded):\n%s", diff)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings: %v", logs.All())
	}
	// The next entry continues the sequence.
	if seq, err := sess.Append(store.Prompt{Text: "more"}); err != nil || seq != int64(len(want)+1) {
		t.Errorf("next seq = %d, %v", seq, err)
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Payload{
		store.Title{Title: "first"},
		store.Mode{Mode: "auto"},
		store.Config{OptionID: "model", Value: "a"},
		store.Config{OptionID: "model", Value: "b"},
		store.AlwaysAllow{Key: "ls"},
		store.AlwaysAllow{Key: "git status"},
		store.AlwaysAllow{Key: "ls"},
		store.Notice{ID: "n1", State: store.NoticeQueued, Text: "one"},
		store.Notice{ID: "n2", State: store.NoticeQueued, Text: "two"},
		store.Notice{ID: "n1", State: store.NoticeDelivered},
		store.TaskStarted{ID: "bash-1"},
		store.TaskStarted{ID: "bash-2"},
		store.TaskStarted{ID: "bash-3"},
		store.TaskEnded{ID: "bash-2"},
		store.Usage{Used: 10, Size: 100},
		store.Usage{Used: 20, Size: 100},
		store.Compaction{Summary: "s", KeptFromSeq: 12},
		store.Cwd{Cwd: "/other"},
		store.Title{Title: "second"},
	} {
		if _, err := sess.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	want := store.State{
		Cwd:            "/other",
		Title:          "second",
		Mode:           "auto",
		Config:         map[string]string{"model": "b"},
		AlwaysAllow:    []string{"ls", "git status"},
		PendingNotices: []store.Notice{{ID: "n2", State: store.NoticeQueued, Text: "two"}},
		RunningTasks:   []string{"bash-1", "bash-3"},
		Usage:          &store.Usage{Used: 20, Size: 100},
		Compaction:     &store.Compaction{Summary: "s", KeptFromSeq: 12},
	}
	if diff := cmp.Diff(want, sess.State()); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestBufferedUntilSync(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	path := filepath.Join(st.Dir(), "sessions", "s1.jsonl")
	if _, err := sess.Append(store.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("hello")) {
		t.Fatal("an entry reached the file before Sync: appends are meant to be buffered")
	}
	if err := sess.Sync(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"text":"hello"`)) {
		t.Fatalf("after Sync the file holds:\n%s", data)
	}
}

func TestTornLastLine(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Append(store.Prompt{Text: "one"})
	sess.Append(store.Assistant{Text: "two"})
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	// Killed mid-write: half of a third line.
	path := filepath.Join(st.Dir(), "sessions", "s1.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"kind":"prompt","time":"2025-01-02T03:04:`)
	f.Close()

	sess, err = st.Open("s1")
	if err != nil {
		t.Fatalf("a torn last line failed the load: %v", err)
	}
	if n := len(sess.Entries()); n != 2 {
		t.Errorf("%d entries loaded, want 2", n)
	}
	if logs.FilterMessage("store: torn last line ignored").Len() != 1 {
		t.Errorf("no warning for the torn line: %v", logs.All())
	}
	if seq, err := sess.Append(store.Prompt{Text: "three"}); err != nil || seq != 3 {
		t.Errorf("append after a torn line: seq %d, %v", seq, err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}

	// Every line is whole JSON: the new entry did not glue onto the torn bytes.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header and 3 lines, file is:\n%s", data)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("line is not JSON: %s", l)
		}
	}
	logs.TakeAll()
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var texts []string
	for _, e := range sess.Entries() {
		p, _ := e.Decode()
		switch v := p.(type) {
		case store.Prompt:
			texts = append(texts, v.Text)
		case store.Assistant:
			texts = append(texts, v.Text)
		}
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, texts); diff != "" {
		t.Errorf("entries after repair (-want +got):\n%s", diff)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings on a clean reload: %v", logs.All())
	}
}

func TestUnknownKindAndBadLineSkipped(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Append(store.Prompt{Text: "one"})
	sess.Close()
	path := filepath.Join(st.Dir(), "sessions", "s1.jsonl")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":2,"kind":"hologram","time":"2025-01-02T03:04:05Z","data":{"x":1}}` + "\n")
	f.WriteString("not json\n")
	f.WriteString(`{"seq":4,"kind":"prompt","time":"2025-01-02T03:04:06Z","data":{"text":"four","future":true}}` + "\n")
	f.Close()

	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if n := len(sess.Entries()); n != 2 {
		t.Errorf("%d entries, want the two prompts", n)
	}
	if logs.FilterMessage("store: entry of unknown kind skipped").Len() != 1 || logs.FilterMessage("store: unreadable line skipped").Len() != 1 {
		t.Errorf("warnings: %v", logs.All())
	}
	if seq, _ := sess.Append(store.Prompt{Text: "five"}); seq != 5 {
		t.Errorf("seq after a skipped entry = %d, want 5 (never reused)", seq)
	}
}

func TestForeignAndNewerNeverTouched(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	ours, err := st.Create("ours", "/work")
	if err != nil {
		t.Fatal(err)
	}
	ours.Close()
	dir := filepath.Join(st.Dir(), "sessions")
	files := map[string]string{
		"foreign.jsonl":       "hello, I am someone else's log\n",
		"noline.jsonl":        "no newline at all",
		"empty.jsonl":         "",
		"newer.jsonl":         `{"format":"dsh-acp/session","version":2,"id":"newer","cwd":"/work","created":"2025-01-01T00:00:00Z"}` + "\n",
		"newermeta.jsonl":     `{"format":"dsh-acp/session","version":2,"id":"newermeta","cwd":"/work","created":"2025-01-01T00:00:00Z"}` + "\n",
		"newermeta.meta.json": `{"format":"dsh-acp/session","version":2,"id":"newermeta","cwd":"/work","created":"2025-01-01T00:00:00Z","updated":"2025-01-01T00:00:00Z"}`,
		"othername.jsonl":     `{"format":"dsh-acp/session","version":1,"id":"someone","cwd":"/work","created":"2025-01-01T00:00:00Z"}` + "\n",
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}

	page, err := st.List(store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "ours" {
		t.Errorf("list = %+v, want only ours", page.Sessions)
	}
	if n := logs.Len(); n != 6 {
		t.Errorf("%d warnings, want one for each of the 6 other files: %v", n, logs.All())
	}
	for id, want := range map[string]error{
		"foreign": store.ErrForeign, "noline": store.ErrForeign, "empty": store.ErrForeign,
		"newer": store.ErrNewerVersion, "newermeta": store.ErrNewerVersion, "othername": store.ErrForeign,
	} {
		if _, err := st.Open(id); !errors.Is(err, want) {
			t.Errorf("open %s: %v, want %v", id, err, want)
		}
		if err := st.Delete(id); !errors.Is(err, want) {
			t.Errorf("delete %s: %v, want %v", id, err, want)
		}
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		got, err := os.ReadFile(p)
		if err != nil || string(got) != data {
			t.Errorf("%s was changed: %q, %v", name, got, err)
		}
		if fi, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s was touched: %v %v", name, fi.ModTime(), fi.Mode())
		}
	}
	des, _ := os.ReadDir(dir)
	if len(des) != len(files)+2 {
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		t.Errorf("files were added: %v", names)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Append(store.Title{Title: "t"})
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.NextTaskIDs(1); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{st.Dir(), filepath.Join(st.Dir(), "sessions")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want 0700", d, fi.Mode(), err)
		}
	}
	n := 0
	filepath.WalkDir(st.Dir(), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		n++
		fi, err := de.Info()
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want 0600", p, fi.Mode(), err)
		}
		return nil
	})
	if n != 4 { // log, sidecar, task-ids, task-ids.lock
		t.Errorf("%d files in the state dir, want 4", n)
	}
}

func TestNewTouchesNothing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	st, _ := newStoreIn(t, dir)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New made the state dir: %v", err)
	}
	page, err := st.List(store.ListOptions{})
	if err != nil || len(page.Sessions) != 0 || page.NextCursor != "" {
		t.Errorf("list of a store never written = %+v, %v", page, err)
	}
	if _, err := st.Open("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("open unknown: %v", err)
	}
	if _, err := store.New(store.Options{}); err == nil {
		t.Error("New without a dir did not fail")
	}
}

func TestIDsAndOpenTwice(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	for _, id := range []string{"", "../x", "a/b", ".hidden", "x y", strings.Repeat("a", 129)} {
		if _, err := st.Create(id, "/w"); !errors.Is(err, store.ErrBadID) {
			t.Errorf("create %q: %v", id, err)
		}
		if _, err := st.Open(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("open %q: %v", id, err)
		}
		if err := st.Delete(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete %q: %v", id, err)
		}
	}
	sess, err := st.Create("0b5e1a3c-1d2e-4f00-8a9b-123456789abc", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(sess.ID(), "/w"); !errors.Is(err, store.ErrExists) {
		t.Errorf("create while open: %v", err)
	}
	if _, err := st.Open(sess.ID()); !errors.Is(err, store.ErrOpen) {
		t.Errorf("open twice: %v", err)
	}
	if err := st.Delete(sess.ID()); !errors.Is(err, store.ErrOpen) {
		t.Errorf("delete while open: %v", err)
	}
	sess.Close()
	if err := sess.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := sess.Append(store.Prompt{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	if err := sess.Sync(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("sync after close: %v", err)
	}
	if _, err := st.Create(sess.ID(), "/w"); !errors.Is(err, store.ErrExists) {
		t.Errorf("create after close: %v", err)
	}
	again, err := st.Open(sess.ID())
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	again.Close()
}

func TestList(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	// Created in order s0..s5 (the clock moves a second each reading); s1 is
	// then updated last, so it is the newest.
	for i, cwd := range []string{"/a", "/b", "/a", "/a/", "/b", "/a"} {
		id := "s" + string(rune('0'+i))
		sess, err := st.Create(id, cwd)
		if err != nil {
			t.Fatal(err)
		}
		sess.Append(store.Title{Title: "title " + id})
		sess.Close()
	}
	s1, err := st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	s1.Append(store.Prompt{Text: "again"})
	s1.Append(store.Title{Title: "renamed"})
	if err := s1.Sync(); err != nil {
		t.Fatal(err)
	}
	defer s1.Close()

	ids := func(p store.Page) []string {
		var out []string
		for _, s := range p.Sessions {
			out = append(out, s.ID)
		}
		return out
	}
	page, err := st.List(store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s1", "s5", "s4", "s3", "s2", "s0"}, ids(page)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if page.NextCursor != "" {
		t.Errorf("one page has a next cursor %q", page.NextCursor)
	}
	first := page.Sessions[0]
	if first.Title != "renamed" || first.Cwd != "/b" || !first.Updated.After(first.Created) {
		t.Errorf("s1 = %+v", first)
	}

	page, err = st.List(store.ListOptions{Cwd: "/a"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s5", "s3", "s2", "s0"}, ids(page)); diff != "" {
		t.Errorf("cwd /a (-want +got):\n%s", diff)
	}

	var all []string
	cur := ""
	for range 10 {
		page, err := st.List(store.ListOptions{Limit: 4, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids(page)...)
		if page.NextCursor == "" {
			break
		}
		cur = page.NextCursor
	}
	if diff := cmp.Diff([]string{"s1", "s5", "s4", "s3", "s2", "s0"}, all); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}

	for _, bad := range []string{"x", "v1.", "v1.!!!", "v1.eHl6", "v1.MTIzLi4vZXRj", "v2.MTIzLnMx"} {
		if _, err := st.List(store.ListOptions{Cursor: bad}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
}

func TestListWithoutSidecar(t *testing.T) {
	t.Parallel()
	st, logs := newStore(t)
	sess, err := st.Create("s1", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sess.Append(store.Title{Title: "kept"})
	sess.Close()
	meta := filepath.Join(st.Dir(), "sessions", "s1.meta.json")
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	page, err := st.List(store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].Cwd != "/work" || page.Sessions[0].Updated.IsZero() {
		t.Fatalf("list without sidecar = %+v", page.Sessions)
	}
	// Open puts the sidecar back, title included.
	sess, err = st.Open("s1")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	page, _ = st.List(store.ListOptions{})
	if len(page.Sessions) != 1 || page.Sessions[0].Title != "kept" {
		t.Errorf("list after open = %+v", page.Sessions)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings: %v", logs.All())
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	for _, id := range []string{"keep", "gone"} {
		sess, err := st.Create(id, "/w")
		if err != nil {
			t.Fatal(err)
		}
		sess.Close()
	}
	if err := st.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete("gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := st.Open("gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("open deleted: %v", err)
	}
	page, _ := st.List(store.ListOptions{})
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "keep" {
		t.Errorf("list = %+v", page.Sessions)
	}
	for _, name := range []string{"gone.jsonl", "gone.meta.json"} {
		if _, err := os.Stat(filepath.Join(st.Dir(), "sessions", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
	// The id is free again.
	sess, err := st.Create("gone", "/w")
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
}

func TestTaskIDs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	st, _ := newStoreIn(t, dir)
	var got []int64
	for _, n := range []int{1, 1, 5, 1} {
		id, err := st.NextTaskIDs(n)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 8}, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	// A restart (a new Store on the same directory) continues the sequence.
	st2, _ := newStoreIn(t, dir)
	if id, err := st2.NextTaskIDs(1); err != nil || id != 9 {
		t.Errorf("after restart: %d, %v; want 9", id, err)
	}
	if _, err := st2.NextTaskIDs(0); err == nil {
		t.Error("NextTaskIDs(0) did not fail")
	}
	// A damaged counter is an error, never a guess.
	os.WriteFile(filepath.Join(dir, "task-ids"), []byte("garbage"), 0o600)
	if _, err := st2.NextTaskIDs(1); err == nil {
		t.Error("a damaged counter was used")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		want       string
		err        bool
	}{
		{"explicit", "linux", map[string]string{"DSH_STATE_DIR": "/s", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s", false},
		{"xdg", "linux", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/dsh-acp", false},
		{"xdg on macOS", "darwin", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/dsh-acp", false},
		{"relative xdg ignored", "linux", map[string]string{"XDG_STATE_HOME": "x", "HOME": "/h"}, "/h/.local/state/dsh-acp", false},
		{"linux", "linux", map[string]string{"HOME": "/h"}, "/h/.local/state/dsh-acp", false},
		{"macOS", "darwin", map[string]string{"HOME": "/Users/u"}, "/Users/u/Library/Application Support/dsh-acp", false},
		{"no home", "linux", map[string]string{}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.DefaultDirFor(tc.goos, func(k string) string { return tc.env[k] })
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
