package executor_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// HostFiles.ReadFile reads with raw system calls: the same answers as a
// plain read, and a FIFO, a directory or a file over the limit refused.
func TestHostFilesReadFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"empty": "", "small": "hello\n", "big": strings.Repeat("x", 100_000)}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var x executor.HostFiles
	for name, body := range files {
		got, err := x.ReadFile(filepath.Join(dir, name), 1<<20)
		if err != nil || string(got) != body {
			t.Errorf("read %s: %d bytes, %v; want %d bytes", name, len(got), err, len(body))
		}
	}
	got, err := x.ReadFile(filepath.Join(dir, "big"), 10)
	if !errors.Is(err, executor.ErrTooLarge) || string(got) != "xxxxxxxxxx" {
		t.Errorf("read big with max 10: %q, %v; want its first 10 bytes and ErrTooLarge", got, err)
	}
	if got, err := x.ReadFile(filepath.Join(dir, "small"), 6); err != nil || string(got) != "hello\n" {
		t.Errorf("read small with max its size: %q, %v", got, err)
	}
	if _, err := x.ReadFile(dir, 1<<20); !executor.ErrIsDir(err) {
		t.Errorf("read a directory: %v; want ErrIsDir", err)
	}
	if _, err := x.ReadFile(filepath.Join(dir, "none"), 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read a missing file: %v; want ErrNotExist", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := x.ReadFile(fifo, 1<<20); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("read a FIFO: %v; want ErrNotRegular, without waiting for a writer", err)
	}
}

// ReadDirInfo's entries carry what an lstat by path says.
func TestHostFilesReadDirInfo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "p"), 0o600); err != nil {
		t.Fatal(err)
	}
	ents, err := executor.HostFiles{}.ReadDirInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 4 {
		t.Fatalf("%d entries; want 4", len(ents))
	}
	for _, e := range ents {
		got, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name() != want.Name() || got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() {
			t.Errorf("%s: %v %v %d %v; want %v %v %d %v", e.Name(), got.Name(), got.Mode(), got.Size(), got.ModTime(), want.Name(), want.Mode(), want.Size(), want.ModTime())
		}
		if e.Type() != want.Mode().Type() {
			t.Errorf("%s: type %v; want %v", e.Name(), e.Type(), want.Mode().Type())
		}
	}
}
