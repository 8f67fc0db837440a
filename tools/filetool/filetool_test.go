package filetool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/filetool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hostExec does every operation directly, as the local executor does
// for an unconfined session.
type hostExec struct{ calls []executor.FileAccess }

func (h *hostExec) Files(a executor.FileAccess) (executor.Files, error) {
	h.calls = append(h.calls, a)
	return executor.HostFiles{}, nil
}
func (*hostExec) FilesAreHosts() bool { return true }

func toolsByName(t testing.TB, ex filetool.Executor, tr *changes.Tracker) map[string]tools.Tool {
	t.Helper()
	ts, err := filetool.Tools(filetool.Options{Executor: ex, Changes: tr})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tools.Tool{}
	for _, tl := range ts {
		m[tl.Name()] = tl
	}
	return m
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, tl tools.Tool, caller tools.Caller, args string) tools.Result {
	t.Helper()
	return tl.Prepare(caller, json.RawMessage(args)).Run(context.Background(), nil)
}

func TestRead(t *testing.T) {
	root := t.TempDir()
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	write(t, root, map[string]string{
		"a.txt":    "one\ntwo\nthree",
		"long.txt": long.String(),
		"wide.txt": strings.Repeat("x", 2100) + "\nshort\n",
		"bin.dat":  "a\x00b",
		"empty":    "",
		"d/x":      "x",
		"big.txt":  strings.Repeat(strings.Repeat("y", 100)+"\n", 1000),
	})
	ts := toolsByName(t, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "s", Cwd: root}
	for _, tc := range []struct {
		name, args, want string
		isErr            bool
	}{
		{"whole", `{"file_path":"a.txt"}`, "1\tone\n2\ttwo\n3\tthree", false},
		{"offset limit", `{"file_path":"a.txt","offset":2,"limit":1}`, "2\ttwo\n[lines 2-2 of 3; read on with offset 3]", false},
		{"absolute", `{"file_path":"` + root + `/a.txt","offset":3}`, "3\tthree", false},
		{"empty", `{"file_path":"empty"}`, "(empty file)", false},
		{"past end", `{"file_path":"a.txt","offset":9}`, "Error: offset 9 is past the end of a.txt (3 lines)", true},
		{"binary", `{"file_path":"bin.dat"}`, "Error: bin.dat is a binary file (3 bytes); these tools read and change text files only", true},
		{"directory", `{"file_path":"d"}`, "Error: d is a directory; glob lists its files", true},
		{"missing", `{"file_path":"nope.txt"}`, "Error: nope.txt does not exist", true},
		{"no path", `{}`, `Error: missing required property "file_path"`, true},
		{"path type", `{"file_path":3}`, `Error: "file_path" must be a string`, true},
		{"bad offset", `{"file_path":"a.txt","offset":0}`, "Error: invalid offset: expected a positive whole number, got 0", true},
		{"not object", `[1]`, "Error: invalid arguments: expected a JSON object", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, ts["read"], caller, tc.args)
			if r.Text != tc.want || r.IsError != tc.isErr {
				t.Errorf("got %q (error %v), want %q (error %v)", r.Text, r.IsError, tc.want, tc.isErr)
			}
		})
	}
	t.Run("2000 lines then how to read on", func(t *testing.T) {
		r := run(t, ts["read"], caller, `{"file_path":"long.txt"}`)
		lines := strings.Split(r.Text, "\n")
		if len(lines) != 2001 || lines[1999] != "2000\tline 2000" || lines[2000] != "[lines 1-2000 of 2500; read on with offset 2001]" {
			t.Errorf("got %d lines, tail %q", len(lines), lines[len(lines)-2:])
		}
		if r.Locations[0].Path != filepath.Join(root, "long.txt") || *r.Locations[0].Line != 0 {
			t.Errorf("locations = %+v", r.Locations)
		}
	})
	t.Run("64 KiB", func(t *testing.T) {
		r := run(t, ts["read"], caller, `{"file_path":"big.txt"}`)
		if len(r.Text) > 64<<10+100 || !strings.HasSuffix(r.Text, "\n[lines 1-625 of 1000; read on with offset 626]") {
			t.Errorf("%d bytes, ends %q", len(r.Text), r.Text[len(r.Text)-60:])
		}
	})
	t.Run("long line cut", func(t *testing.T) {
		r := run(t, ts["read"], caller, `{"file_path":"wide.txt"}`)
		want := "1\t" + strings.Repeat("x", 2000) + "… [line cut: 100 more bytes]\n2\tshort"
		if r.Text != want {
			t.Errorf("got %q", r.Text)
		}
	})
}

func TestWriteEdit(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a.txt": "one two two\n", "b.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(root, "b.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := changes.New(changes.Options{NoEvents: true})
	defer tr.Close()
	ts := toolsByName(t, &hostExec{}, tr)
	caller := tools.Caller{SessionID: "s", Cwd: root}

	r := run(t, ts["write"], caller, `{"file_path":"x/y/new.txt","content":"hi\nthere\n"}`)
	if r.Text != "Created x/y/new.txt (2 lines)" || r.IsError {
		t.Fatalf("write: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "x/y/new.txt")); string(got) != "hi\nthere\n" {
		t.Errorf("file = %q", got)
	}
	if len(r.Changes) != 1 || r.Changes[0].OldText != nil || r.Changes[0].NewText != "hi\nthere\n" || r.Changes[0].Path != filepath.Join(root, "x/y/new.txt") {
		t.Errorf("changes = %+v", r.Changes)
	}
	r = run(t, ts["write"], caller, `{"file_path":"b.sh","content":""}`)
	if r.Text != "Wrote b.sh (0 lines)" || len(r.Changes) != 1 || *r.Changes[0].OldText != "#!/bin/sh\n" {
		t.Errorf("write over: %+v", r)
	}
	if fi, err := os.Stat(filepath.Join(root, "b.sh")); err != nil || fi.Mode().Perm() != 0o755 || fi.Size() != 0 {
		t.Errorf("b.sh: %v %v", fi, err)
	}

	for _, tc := range []struct {
		name, args, want string
	}{
		{"not unique", `{"file_path":"a.txt","old_string":"two","new_string":"2"}`, "Error: old_string occurs 2 times in a.txt; include more surrounding lines to make it unique, or set replace_all to replace every one"},
		{"not found", `{"file_path":"a.txt","old_string":"three","new_string":"3"}`, "Error: old_string was not found in a.txt; read the file to see its current text"},
		{"same", `{"file_path":"a.txt","old_string":"one","new_string":"one"}`, "Error: old_string and new_string are the same; there is nothing to change"},
		{"missing file", `{"file_path":"none.txt","old_string":"a","new_string":"b"}`, "Error: none.txt does not exist; write creates a file"},
		{"empty old", `{"file_path":"a.txt","old_string":"","new_string":"b"}`, "Error: invalid old_string: expected a non-empty string"},
		{"no new", `{"file_path":"a.txt","old_string":"a"}`, `Error: missing required property "new_string"`},
		{"replace_all type", `{"file_path":"a.txt","old_string":"one","new_string":"1","replace_all":"yes"}`, `Error: "replace_all" must be a boolean`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, ts["edit"], caller, tc.args)
			if r.Text != tc.want || !r.IsError {
				t.Errorf("got %q, want %q", r.Text, tc.want)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "one two two\n" {
		t.Fatalf("a failed edit changed the file: %q", got)
	}
	r = run(t, ts["edit"], caller, `{"file_path":"a.txt","old_string":"one","new_string":"1"}`)
	if r.Text != "Edited a.txt" || len(r.Changes) != 1 || *r.Changes[0].OldText != "one two two\n" || r.Changes[0].NewText != "1 two two\n" {
		t.Errorf("edit: %+v", r)
	}
	r = run(t, ts["edit"], caller, `{"file_path":"a.txt","old_string":"two","new_string":"2","replace_all":true}`)
	if r.Text != "Edited a.txt: 2 replacements" || r.Changes[0].NewText != "1 2 2\n" {
		t.Errorf("replace_all: %+v", r)
	}
	// The tracker recorded the edits as the calls' changes: a command
	// measured after them does not report them again.
	m := tr.Begin(changes.Key{Session: "s", Root: root})
	if cs := m.End(); len(cs) != 0 {
		t.Errorf("a later command reports the tools' changes again: %+v", cs)
	}
}

func TestEditOutsideIsShownToo(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	write(t, other, map[string]string{"o.txt": "a\n"})
	tr := changes.New(changes.Options{NoEvents: true})
	defer tr.Close()
	ts := toolsByName(t, &hostExec{}, tr)
	caller := tools.Caller{SessionID: "s", Cwd: root}
	p := ts["edit"].Prepare(caller, json.RawMessage(`{"file_path":"`+other+`/o.txt","old_string":"a","new_string":"b"}`))
	if p.Call.Subject.Kind != tools.FileWrite || p.Call.Subject.Inside {
		t.Errorf("subject = %+v", p.Call.Subject)
	}
	if pv := p.Call.Preview(context.Background()); len(pv) != 1 || *pv[0].OldText != "a\n" || pv[0].NewText != "b\n" {
		t.Errorf("preview = %+v", pv)
	}
	r := p.Run(context.Background(), nil)
	if len(r.Changes) != 1 || r.Changes[0].Path != filepath.Join(other, "o.txt") || len(r.Locations) != 1 {
		t.Errorf("changes = %+v, locations %+v", r.Changes, r.Locations)
	}
}

func TestSubjects(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	write(t, root, map[string]string{"in.txt": "x"})
	if err := os.Symlink(other, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	ts := toolsByName(t, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "s", Cwd: root}
	for _, tc := range []struct {
		tool, args string
		kind       tools.SubjectKind
		inside     bool
	}{
		{"read", `{"file_path":"in.txt"}`, tools.FileRead, true},
		{"read", `{"file_path":"out/x"}`, tools.FileRead, false},
		{"read", `{"file_path":"/etc/hostname"}`, tools.FileRead, false},
		{"write", `{"file_path":"new/in.txt","content":""}`, tools.FileWrite, true},
		{"write", `{"file_path":"out/new.txt","content":""}`, tools.FileWrite, false},
		{"edit", `{"file_path":"../x","old_string":"a","new_string":"b"}`, tools.FileWrite, false},
		{"grep", `{"pattern":"x"}`, tools.FileRead, true},
		{"glob", `{"pattern":"*","path":"out"}`, tools.FileRead, false},
		{"read", `{}`, tools.NoApproval, false},
	} {
		sub := ts[tc.tool].Prepare(caller, json.RawMessage(tc.args)).Call.Subject
		if sub.Kind != tc.kind || sub.Inside != tc.inside {
			t.Errorf("%s %s: subject %+v", tc.tool, tc.args, sub)
		}
	}
}

func TestGlob(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"a.go": "", "sub/b.go": "", "sub/deep/c.go": "", "sub/x.txt": "",
		"node_modules/m.go": "", ".gitignore": "node_modules/\n", ".git/HEAD": "ref\n",
	})
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(root, "sub/deep/c.go"), old, old); err != nil {
		t.Fatal(err)
	}
	ts := toolsByName(t, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "s", Cwd: root}
	for _, tc := range []struct{ args, want string }{
		{`{"pattern":"**/*.go"}`, "a.go\nsub/b.go\nsub/deep/c.go"},
		{`{"pattern":"sub/**/*.go"}`, "sub/b.go\nsub/deep/c.go"},
		{`{"pattern":"*.go","path":"sub"}`, "sub/b.go"},
		{`{"pattern":"` + root + `/sub/*.txt"}`, "sub/x.txt"},
		{`{"pattern":"nothere/**"}`, "No files match nothere/** in ."},
		{`{"pattern":"[x"}`, `Error: invalid pattern "[x"`},
	} {
		r := run(t, ts["glob"], caller, tc.args)
		// a.go and sub/b.go may share an mtime; the old one is last.
		if r.Text != tc.want && !(strings.Contains(tc.args, `"**/*.go"`) && r.Text == "sub/b.go\na.go\nsub/deep/c.go") {
			t.Errorf("%s: got %q, want %q", tc.args, r.Text, tc.want)
		}
	}
	t.Run("cap", func(t *testing.T) {
		many := t.TempDir()
		for i := range 1003 {
			write(t, many, map[string]string{fmt.Sprintf("f%04d", i): ""})
		}
		r := run(t, ts["glob"], tools.Caller{Cwd: many}, `{"pattern":"*"}`)
		lines := strings.Split(r.Text, "\n")
		if len(lines) != 1001 || lines[1000] != "[… and 3 more files not shown; narrow the pattern or path]" {
			t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
		}
	})
}

func TestGrep(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"a.go":              "package a\nfunc Foo() {}\n// foo\n",
		"sub/b.go":          "Foo()\nbar\nFoo Foo\n",
		"sub/b.txt":         "Foo\n",
		"bin":               "Foo\x00",
		"ignored.go":        "Foo\n",
		".gitignore":        "ignored.go\n",
		".git/config":       "Foo\n",
		"node/.gitignore":   "*.js\n",
		"node/x.js":         "Foo\n",
		"node/y.ts":         "Foo\n",
		"crlf.txt":          "x\r\nFoo\r\n",
		"sub/deep/long.txt": strings.Repeat("Foo", 200) + "\n",
	})
	ts := toolsByName(t, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "s", Cwd: root}
	for _, tc := range []struct{ args, want string }{
		{`{"pattern":"^Foo","include":"*.go"}`, "sub/b.go\n1:Foo()\n3:Foo Foo"},
		{`{"pattern":"Foo","path":"sub","include":"b.txt"}`, "sub/b.txt\n1:Foo"},
		{`{"pattern":"Foo","path":"sub/b.txt"}`, "sub/b.txt\n1:Foo"},
		{`{"pattern":"Foo","include":"node/**"}`, "node/y.ts\n1:Foo"},
		{`{"pattern":"^Foo","include":"crlf.txt"}`, "crlf.txt\n2:Foo"},
		{`{"pattern":"(?i)^// FOO"}`, "a.go\n3:// foo"},
		{`{"pattern":"nothing here"}`, "No matches for nothing here in ."},
		{`{"pattern":"a("}`, "Error: invalid pattern: missing closing ): `a(`"},
		{`{"pattern":"x","path":"missing"}`, "Error: missing does not exist"},
	} {
		r := run(t, ts["grep"], caller, tc.args)
		if r.Text != tc.want {
			t.Errorf("%s: got %q, want %q", tc.args, r.Text, tc.want)
		}
	}
	r := run(t, ts["grep"], caller, `{"pattern":"Foo","include":"long.txt"}`)
	if !strings.HasSuffix(r.Text, "… [line cut: 100 more bytes]") {
		t.Errorf("long line: %q", r.Text)
	}
	t.Run("cap", func(t *testing.T) {
		many := t.TempDir()
		write(t, many, map[string]string{"a.txt": strings.Repeat("hit\n", 200), "b.txt": strings.Repeat("hit\n", 100)})
		r := run(t, ts["grep"], tools.Caller{Cwd: many}, `{"pattern":"hit"}`)
		lines := strings.Split(r.Text, "\n")
		// a.txt: header + 200, blank, b.txt: header + 50, note.
		if len(lines) != 254 || lines[253] != "[… and 50 more matching lines not shown; narrow the pattern, path or include]" || lines[202] != "b.txt" {
			t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
		}
	})
}

// denyExec refuses the operations, as an executor that cannot reach the
// session's files does.
type denyExec struct{}

func (denyExec) Files(executor.FileAccess) (executor.Files, error) {
	return nil, executor.ErrNoFiles
}
func (denyExec) FilesAreHosts() bool { return false }

func TestNoFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a": "x"})
	ts := toolsByName(t, denyExec{}, nil)
	r := run(t, ts["read"], tools.Caller{Cwd: root}, `{"file_path":"a"}`)
	if !r.IsError || r.Text != "Error: the file tools cannot reach this session's files with this executor; use bash" {
		t.Errorf("got %+v", r)
	}
	if !errors.Is(executor.ErrNoFiles, executor.ErrNoFiles) {
		t.Fatal("unreachable")
	}
}

// fakeEditor is a client's buffers: reads see them, writes go to them
// and to disk (as Zed saves what it is sent).
type fakeEditor struct {
	buffers map[string]string
	reads   []string
	writes  []string
}

func (e *fakeEditor) ReadTextFile(_ context.Context, path string) (string, error) {
	e.reads = append(e.reads, path)
	if b, ok := e.buffers[path]; ok {
		return b, nil
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

func (e *fakeEditor) WriteTextFile(_ context.Context, path, content string) error {
	e.writes = append(e.writes, path)
	e.buffers[path] = content
	return os.WriteFile(path, []byte(content), 0o644)
}

func TestEditorFiles(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	write(t, root, map[string]string{"a.txt": "on disk\n"})
	write(t, other, map[string]string{"o.txt": "outside\n"})
	ed := &fakeEditor{buffers: map[string]string{filepath.Join(root, "a.txt"): "unsaved\n"}}
	ts := toolsByName(t, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "s", Cwd: root, Editor: ed}
	if r := run(t, ts["read"], caller, `{"file_path":"a.txt"}`); r.Text != "1\tunsaved" {
		t.Errorf("read = %q", r.Text)
	}
	if r := run(t, ts["edit"], caller, `{"file_path":"a.txt","old_string":"unsaved","new_string":"edited"}`); r.IsError || *r.Changes[0].OldText != "unsaved\n" {
		t.Errorf("edit = %+v", r)
	}
	if r := run(t, ts["read"], caller, `{"file_path":"`+other+`/o.txt"}`); r.Text != "1\toutside" {
		t.Errorf("read outside = %q", r.Text)
	}
	if r := run(t, ts["write"], caller, `{"file_path":"`+other+`/o.txt","content":"x"}`); r.IsError {
		t.Errorf("write outside = %+v", r)
	}
	a := filepath.Join(root, "a.txt")
	if strings.Join(ed.reads, ",") != a+","+a || strings.Join(ed.writes, ",") != a {
		t.Errorf("the editor was asked reads %v writes %v; want only the session's file", ed.reads, ed.writes)
	}
	// Files that are not the editor's (a remote engine) never go to it.
	remote := toolsByName(t, remoteExec{}, nil)
	ed.reads = nil
	if r := run(t, remote["read"], caller, `{"file_path":"a.txt"}`); r.Text != "1\tedited" || len(ed.reads) != 0 {
		t.Errorf("remote read = %q, editor reads %v", r.Text, ed.reads)
	}
}

type remoteExec struct{}

func (remoteExec) Files(executor.FileAccess) (executor.Files, error) {
	return executor.HostFiles{}, nil
}
func (remoteExec) FilesAreHosts() bool { return false }

func TestSandboxedCallAsksForConfinedFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a": "x\n"})
	ex := &hostExec{}
	ts := toolsByName(t, ex, nil)
	p := ts["read"].Prepare(tools.Caller{SessionID: "s", Cwd: root}, json.RawMessage(`{"file_path":"a"}`))
	p.Run(tools.WithSandbox(context.Background()), nil)
	if len(ex.calls) != 1 || !ex.calls[0].Sandboxed || ex.calls[0].Root != root || ex.calls[0].Owner != "s" {
		t.Errorf("file access = %+v", ex.calls)
	}
}

// glob and grep skip what git ignores from every source git reads: the
// user's excludes (core.excludesFile, else $XDG_CONFIG_HOME/git/ignore,
// else ~/.config/git/ignore), .git/info/exclude and .gitignore, the nearer
// rule winning; outside a repository the user's excludes do not apply.
func TestSearchSkipsWhatGitIgnores(t *testing.T) {
	repoFiles := map[string]string{
		".git/HEAD":         "ref: refs/heads/main\n",
		".git/info/exclude": "local/\n",
		".gitignore":        "!keep.log\n",
		"a.go":              "needle\n",
		"debug.log":         "needle\n",
		"keep.log":          "needle\n",
		"local/x.go":        "needle\n",
		"secret/s.go":       "needle\n",
		"sub/b.go":          "needle\n",
	}
	each := func(t *testing.T, home, xdg string, want string) {
		t.Helper()
		root := t.TempDir()
		write(t, root, repoFiles)
		ts, err := filetool.Tools(filetool.Options{Executor: &hostExec{}, Home: home, XDGConfigHome: xdg})
		if err != nil {
			t.Fatal(err)
		}
		caller := tools.Caller{SessionID: "s", Cwd: root}
		var glob, grep tools.Tool
		for _, tl := range ts {
			switch tl.Name() {
			case "glob":
				glob = tl
			case "grep":
				grep = tl
			}
		}
		got := strings.Split(run(t, glob, caller, `{"pattern":"**/*"}`).Text, "\n")
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("glob: %q; want %q", strings.Join(got, " "), want)
		}
		var grepped []string
		for _, line := range strings.Split(run(t, grep, caller, `{"pattern":"needle"}`).Text, "\n") {
			if line != "" && !strings.HasPrefix(line, "1:") {
				grepped = append(grepped, line)
			}
		}
		slices.Sort(grepped)
		if strings.Join(grepped, " ") != strings.ReplaceAll(want, ".gitignore ", "") {
			t.Errorf("grep: %q; want %q", strings.Join(grepped, " "), strings.ReplaceAll(want, ".gitignore ", ""))
		}
	}
	t.Run("XDG_CONFIG_HOME", func(t *testing.T) {
		home, xdg := t.TempDir(), t.TempDir()
		write(t, xdg, map[string]string{"git/ignore": "*.log\nsecret/\n"})
		write(t, home, map[string]string{".config/git/ignore": "*.go\n"}) // not read: XDG_CONFIG_HOME is set
		each(t, home, xdg, ".gitignore a.go keep.log sub/b.go")
	})
	t.Run("~/.config", func(t *testing.T) {
		home := t.TempDir()
		write(t, home, map[string]string{".config/git/ignore": "*.log\n"})
		each(t, home, "", ".gitignore a.go keep.log secret/s.go sub/b.go")
	})
	t.Run("core.excludesFile", func(t *testing.T) {
		home := t.TempDir()
		write(t, home, map[string]string{
			".gitconfig":         "[core]\n\texcludesFile = ~/my-ignores\n",
			"my-ignores":         "secret/\nsub/\n",
			".config/git/ignore": "*.go\n", // not read: core.excludesFile wins
		})
		each(t, home, "", ".gitignore a.go debug.log keep.log")
	})
	t.Run("none", func(t *testing.T) {
		each(t, "", "", ".gitignore a.go debug.log keep.log secret/s.go sub/b.go")
	})
	t.Run("outside a repository", func(t *testing.T) {
		home, root := t.TempDir(), t.TempDir()
		write(t, home, map[string]string{".config/git/ignore": "*.log\n"})
		write(t, root, map[string]string{"debug.log": "needle\n"})
		ts, err := filetool.Tools(filetool.Options{Executor: &hostExec{}, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range ts {
			if tl.Name() == "glob" {
				if r := run(t, tl, tools.Caller{Cwd: root}, `{"pattern":"*"}`); r.Text != "debug.log" {
					t.Errorf("glob outside a repository: %q; want debug.log (git's excludes are a repository's)", r.Text)
				}
			}
		}
	})
}
