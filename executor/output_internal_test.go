package executor

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestRing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 7, 100, 4096} {
		r := ring{max: size}
		var all []byte
		var over int
		for range 500 {
			p := make([]byte, rng.IntN(3*size+2))
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			all = append(all, p...)
			over += r.write(p)
			want := all[max(0, len(all)-size):]
			if got := r.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("max %d: ring holds %d bytes, want the last %d", size, len(got), len(want))
			}
			if over != len(all)-len(want) {
				t.Fatalf("max %d: overwritten %d, want %d", size, over, len(all)-len(want))
			}
		}
	}
}

func TestUTF8Cuts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         string
		skip, hold int
	}{
		{"ascii", "abc", 0, 0},
		{"empty", "", 0, 0},
		{"cut two-byte", "\xa9abc", 1, 0},
		{"cut four-byte", "\x9f\x98\x80a", 3, 0},
		{"not utf-8", "\x80\x80\x80\x80a", 3, 0},
		{"incomplete two-byte", "ab\xc3", 0, 1},
		{"incomplete four-byte", "a\xf0\x9f\x98", 0, 3},
		{"complete", "aé", 0, 0},
		{"complete emoji", "😀", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := skipPartialRune([]byte(tc.in)); got != tc.skip {
				t.Errorf("skipPartialRune = %d, want %d", got, tc.skip)
			}
			if got := incompleteSuffix([]byte(tc.in)); got != tc.hold {
				t.Errorf("incompleteSuffix = %d, want %d", got, tc.hold)
			}
		})
	}
}

// A spill file whose writes fail is dropped: the stream says truncated with
// no path rather than naming an incomplete file.
func TestCaptureSpillWriteFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var path string
	open := func(label string) (*os.File, error) {
		f, err := os.CreateTemp(dir, label)
		if err != nil {
			return nil, err
		}
		path = f.Name()
		// Read-only handle: every write fails.
		_ = f.Close()
		return os.Open(path)
	}
	c := newCapture("x", 4, 0, open, zap.NewNop(), nil)
	for _, s := range []string{"ab", "cd", "ef", "gh"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	c.finish()
	out := c.output()
	if !out.Truncated || out.SpillPath != "" || out.Text != "efgh" || out.Bytes != 8 {
		t.Errorf("output %+v", out)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("broken spill file left at %s: %v", path, err)
	}
}

func TestCaptureLazySpill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opened := 0
	open := func(label string) (*os.File, error) {
		opened++
		return os.CreateTemp(dir, label)
	}
	c := newCapture("x", 10, 0, open, zap.NewNop(), nil)
	_, _ = c.Write([]byte(strings.Repeat("a", 10)))
	if opened != 0 {
		t.Fatal("spill file created before overflow")
	}
	_, _ = c.Write([]byte("bcd"))
	c.finish()
	out := c.output()
	full, err := os.ReadFile(out.SpillPath)
	if err != nil || string(full) != "aaaaaaaaaabcd" || filepath.Dir(out.SpillPath) != dir {
		t.Errorf("spill %q = %q, %v", out.SpillPath, full, err)
	}
	if out.Text != "aaaaaaabcd" || opened != 1 {
		t.Errorf("output %+v, opened %d", out, opened)
	}
}
