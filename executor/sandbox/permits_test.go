package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPermits asks the policy the questions the file tools ask of it:
// the grants, a denied tree inside them, a tree re-opened inside a denied
// one, and a link that leads out.
func TestPermits(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cwd, tmp, agent, spills, own, elsewhere := mk("cwd"), mk("tmp"), mk("agent"), mk("spills"), mk("spills/own"), mk("elsewhere")
	if err := os.Symlink(elsewhere, filepath.Join(cwd, "out")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Workdir: cwd, TempDir: tmp, Shell: "/bin/bash", Deny: []string{agent, spills}, Read: []string{"/", own}}
	for _, tc := range []struct {
		path  string
		write bool
		want  bool
	}{
		{cwd + "/a.txt", true, true},
		{cwd + "/new/dir/b.txt", true, true},
		{tmp + "/x", true, true},
		{elsewhere + "/x", true, false},
		{cwd + "/out/x", true, false}, // the link leads out
		{cwd + "/out/x", false, true},
		{elsewhere + "/x", false, true},
		{agent + "/log", false, false},
		{agent, false, false},
		{spills + "/other/x", false, false},
		{own + "/x", false, true}, // re-opened inside a denied tree
		{own + "/x", true, false},
		{"/dev/null", true, true},
		{"/etc/passwd", true, false},
	} {
		if got := p.Permits(tc.path, tc.write); got != tc.want {
			t.Errorf("Permits(%s, write=%v) = %v, want %v", tc.path, tc.write, got, tc.want)
		}
	}
	narrow := p
	narrow.Read = []string{own}
	if narrow.Permits(elsewhere+"/x", false) || !narrow.Permits(cwd+"/a", false) || !narrow.Permits("/usr/bin/env", false) {
		t.Error("a narrowed Read: elsewhere readable, or the session's directory or the system's not")
	}
}
