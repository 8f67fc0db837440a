//go:build unix

package untrusted_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

func TestOpenIn(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	mustWrite := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(dir, "a", "AGENTS.md"), "in")
	mustWrite(filepath.Join(outside, "key"), "secret")
	link("AGENTS.md", "a/CLAUDE.md")                     // a sibling
	link("../a/AGENTS.md", "a/up")                       // up and down again, still in
	link(filepath.Join(dir, "a", "AGENTS.md"), "abs-in") // absolute, in
	link(filepath.Join(outside, "key"), "abs-out")       // absolute, out
	link("../"+filepath.Base(outside)+"/key", "rel-out") // relative, out
	link(outside, "dir-out")                             // a directory out
	link("a", "dir-in")                                  // a directory in
	link("loop", "loop")                                 // a loop
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel   string
		links untrusted.Links
		want  string
		err   error
	}{
		{"a/AGENTS.md", untrusted.NoLinks, "in", nil},
		{"a/./AGENTS.md", untrusted.NoLinks, "in", nil},
		{"a/../a/AGENTS.md", untrusted.NoLinks, "in", nil},
		{"a/CLAUDE.md", untrusted.NoLinks, "", untrusted.ErrLink},
		{"a/CLAUDE.md", untrusted.LinksWithin, "in", nil},
		{"a/up", untrusted.LinksWithin, "in", nil},
		{"abs-in", untrusted.LinksWithin, "in", nil},
		{"dir-in/AGENTS.md", untrusted.LinksWithin, "in", nil},
		{"dir-in/AGENTS.md", untrusted.NoLinks, "", untrusted.ErrLink},
		{"abs-out", untrusted.LinksWithin, "", untrusted.ErrOutside},
		{"rel-out", untrusted.LinksWithin, "", untrusted.ErrOutside},
		{"dir-out/key", untrusted.LinksWithin, "", untrusted.ErrOutside},
		{"../" + filepath.Base(outside) + "/key", untrusted.LinksWithin, "", untrusted.ErrOutside},
		{filepath.Join(outside, "key"), untrusted.LinksWithin, "", untrusted.ErrOutside},
		{"loop", untrusted.LinksWithin, "", syscall.ELOOP},
		{"fifo", untrusted.LinksWithin, "", untrusted.ErrNotRegular},
		{"a", untrusted.LinksWithin, "", untrusted.ErrNotRegular},
		{"a/AGENTS.md/x", untrusted.LinksWithin, "", syscall.ENOTDIR},
		{"missing", untrusted.LinksWithin, "", os.ErrNotExist},
	} {
		f, err := untrusted.OpenIn(dir, c.rel, c.links)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("OpenIn(%s, %d): %v; want %v", c.rel, c.links, err, c.err)
			}
			if f != nil {
				f.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenIn(%s, %d): %v", c.rel, c.links, err)
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != c.want {
			t.Errorf("OpenIn(%s, %d) read %q, %v; want %q", c.rel, c.links, b, err, c.want)
		}
	}
	for rel, want := range map[string]error{"a": nil, ".": nil, "a/..": nil, "dir-in": untrusted.ErrLink, "..": untrusted.ErrOutside, "a/AGENTS.md": syscall.ENOTDIR} {
		d, err := untrusted.OpenDirIn(dir, rel, untrusted.NoLinks)
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("OpenDirIn(%s): %v; want %v", rel, err, want)
		}
		if err == nil {
			if _, err := d.ReadDir(-1); err != nil {
				t.Errorf("OpenDirIn(%s): read: %v", rel, err)
			}
			d.Close()
		}
	}
	a, err := untrusted.OpenDirIn(dir, "a", untrusted.NoLinks)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for name, want := range map[string]error{"AGENTS.md": nil, "CLAUDE.md": untrusted.ErrNotRegular, "../a/AGENTS.md": untrusted.ErrOutside, "..": untrusted.ErrOutside} {
		f, err := untrusted.OpenAt(a, name)
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("OpenAt(a, %s): %v; want %v", name, err, want)
		}
		if err == nil {
			f.Close()
		}
	}
	if b, err := untrusted.ReadIn(dir, "a/AGENTS.md", untrusted.NoLinks, 1); err != nil || string(b) != "i" {
		t.Errorf("ReadIn with a limit = %q, %v", b, err)
	}
}

// RelIn takes a path below dir as written, or below dir's real path.
func TestRelIn(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	dir := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, dir); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "a", "b"):  filepath.Join("a", "b"),
		filepath.Join(real, "a", "b"): filepath.Join("a", "b"),
		filepath.Join(dir, ".."):      "",
		"/etc/passwd":                 "",
	} {
		rel, ok := untrusted.RelIn(dir, path)
		if rel != want || ok != (want != "") {
			t.Errorf("RelIn(%s) = %q, %v; want %q", path, rel, ok, want)
		}
	}
}
