package turn

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestLinkPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		uri, want string
		ok        bool
	}{
		{"file:///a/b%20c.go", "/a/b c.go", true},
		{"file://localhost/a/b.go", "/a/b.go", true},
		{"file://host/a/b.go", "", false},
		{"/abs/x.go", "/abs/x.go", true},
		{"rel/x.go", "/cwd/rel/x.go", true},
		{"https://example.com/x", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := linkPath(c.uri, "/cwd")
		if got != c.want || ok != c.ok {
			t.Errorf("linkPath(%q) = %q, %v; want %q, %v", c.uri, got, ok, c.want, c.ok)
		}
	}
}

func TestReadInside(t *testing.T) {
	t.Parallel()
	outer := t.TempDir()
	cwd := filepath.Join(outer, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"outside.txt": "secret", "cwd/in.txt": "inside", "cwd/bin": "a\x00b", "cwd/big.txt": strings.Repeat("x", MaxResourceText+100)} {
		if err := os.WriteFile(filepath.Join(outer, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link inside the cwd that points outside it is outside.
	if err := os.Symlink(filepath.Join(outer, "outside.txt"), filepath.Join(cwd, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	// A FIFO in the cwd (an @-mentioned one) is refused at once: opening
	// it must not wait for a writer (without O_NONBLOCK this test hangs).
	if err := syscall.Mkfifo(filepath.Join(cwd, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := readInside(filepath.Join(cwd, "fifo"), cwd); err == nil {
		t.Errorf("a FIFO read as %q", got)
	}
	if got, err := readInside(filepath.Join(cwd, "in.txt"), cwd); err != nil || got != "inside" {
		t.Errorf("inside: %q, %v", got, err)
	}
	for _, p := range []string{filepath.Join(outer, "outside.txt"), filepath.Join(cwd, "escape.txt"), filepath.Join(cwd, "bin"), filepath.Join(cwd, "missing"), cwd} {
		if got, err := readInside(p, cwd); err == nil {
			t.Errorf("%s read as %q; want an error", p, got)
		}
	}
	big, err := readInside(filepath.Join(cwd, "big.txt"), cwd)
	if err != nil || len(big) != MaxResourceText+1 {
		t.Fatalf("big: %d bytes, %v; want the bound plus one", len(big), err)
	}
	text := contextText("file:///x", "/x", big)
	if !strings.HasSuffix(text, "\n[only the first 10485759 bytes are shown; read the file for the rest]\n</context>") || strings.Contains(text, strings.Repeat("x", MaxResourceText+1)) {
		t.Errorf("cut text ends %q", text[len(text)-120:])
	}
}

func TestContextTextCutsAtACharacter(t *testing.T) {
	t.Parallel()
	// The bound falls inside the last "é" (2 bytes): it is left out whole.
	text := strings.Repeat("a", MaxResourceText-1) + "éé"
	got := contextText("u", "", text)
	if !strings.Contains(got, strings.Repeat("a", MaxResourceText-1)+"\n[only the first") {
		t.Errorf("cut inside a character: ends %q", got[len(got)-100:])
	}
}

// A command renaming a link to a directory the sandbox denies over a
// directory above an @-mentioned file, again and again: a path checked
// once and read again by name would follow it (O_NOFOLLOW guards the last
// name only), and put the denied file in the prompt.
func TestReadInsideDirectorySwappedIn(t *testing.T) {
	t.Parallel()
	secretDir, cwd := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "notes.txt"), []byte("sk-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "sub", "notes.txt"), []byte("plain"), 0o600); err != nil {
		t.Fatal(err)
	}
	attack := testutil.SwapDirLink(t, filepath.Join(cwd, "sub"), secretDir)
	read := 0
	for i := 0; i < 200000 && (i < 2000 || attack.Swaps() < 1000); i++ {
		text, err := readInside(filepath.Join(cwd, "sub", "notes.txt"), cwd)
		if err == nil {
			read++
		}
		if strings.Contains(text, "SECRET") {
			attack.Stop()
			t.Fatalf("the denied file was read after %d reads", read)
		}
	}
	if swaps := attack.Stop(); swaps == 0 || read == 0 {
		t.Fatalf("no attack: %d links swapped in, %d reads", swaps, read)
	}
}
