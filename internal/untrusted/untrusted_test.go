//go:build unix

package untrusted_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

func TestReadRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, fifo, link := filepath.Join(dir, "f"), filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if b, err := untrusted.Read(file, 0, 4); err != nil || string(b) != "0123" {
		t.Errorf("Read with a limit = %q, %v; want 0123", b, err)
	}
	if b, err := untrusted.ReadWhole(file, 0, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadWhole of a file that fits = %q, %v", b, err)
	}
	if _, err := untrusted.ReadWhole(file, 0, 9); err == nil {
		t.Error("ReadWhole of a file over its bound: no error")
	}
	// Would block for ever without O_NONBLOCK: no writer ever comes.
	if _, err := untrusted.Read(fifo, 0, 4); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("Read of a FIFO: %v; want ErrNotRegular", err)
	}
	if _, err := untrusted.Open(fifo, os.O_WRONLY, 0); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("Open of a FIFO for writing: %v; want ErrNotRegular", err)
	}
	if b, err := untrusted.Read(link, 0, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("Read through a link = %q, %v; want it followed", b, err)
	}
	if _, err := untrusted.Read(link, syscall.O_NOFOLLOW, 10); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("Read of a link with O_NOFOLLOW: %v; want ErrNotRegular", err)
	}
	if _, err := untrusted.Read(dir, 0, 10); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("Read of a directory: %v; want ErrNotRegular", err)
	}
}
