package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// A confined command that keeps renaming a link to a file the policy denies
// over a file of its directory must never get the file tools to read or
// write the denied file: the check and the operation are one walk, never a
// second lookup by name (issue 31: a link swapped in after a check).
func TestCheckedFilesLinkSwappedAfterCheck(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	denied := filepath.Join(base, "denied")
	for _, d := range []string{work, denied} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(denied, "key")
	const secretText = "SECRET-KEY-BYTES"
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	files := executor.CheckedFiles{Allow: func(real string, write bool) error {
		if real == denied || strings.HasPrefix(real, denied+"/") {
			return errors.New("denied")
		}
		return nil
	}}

	target := filepath.Join(work, "file.txt")
	plain := filepath.Join(work, ".plain")
	link := filepath.Join(work, ".link")
	if err := os.WriteFile(target, []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The attacker: a regular file and a link to the secret, renamed over
	// the target in turn, until the reader is done (bounded all the same).
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5_000_000; i++ {
			select {
			case <-done:
				return
			default:
			}
			_ = os.WriteFile(plain, []byte("plain"), 0o644)
			_ = os.Rename(plain, target)
			_ = os.Symlink(secret, link)
			_ = os.Rename(link, target)
		}
	}()

	var read, refused int
	for i := 0; i < 3000; i++ {
		b, err := files.ReadFile(target, 1<<20)
		if err != nil {
			refused++
		} else {
			read++
		}
		if strings.Contains(string(b), secretText) {
			close(done)
			wg.Wait()
			t.Fatalf("read %d: the denied file's bytes came back: %q", i, b)
		}
		// A write must land in the work directory or nowhere.
		_ = files.WriteFile(target, []byte("written"))
		if got, _ := os.ReadFile(secret); string(got) != secretText {
			close(done)
			wg.Wait()
			t.Fatalf("write %d: the denied file was written: %q", i, got)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("%d reads of the file, %d refused (a link was in place)", read, refused)
	if read == 0 {
		t.Error("no read succeeded: the file tools refuse a plain file")
	}
}

// What is missing of a written file's directory is made, one name at a
// time, and a directory at the path is a clear error.
func TestCheckedFilesWriteMakesParents(t *testing.T) {
	dir := t.TempDir()
	files := executor.CheckedFiles{Allow: func(string, bool) error { return nil }}
	p := filepath.Join(dir, "a", "b", "c.txt")
	if err := files.WriteFile(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := files.ReadFile(p, 10); err != nil || string(b) != "x" {
		t.Fatalf("read back: %q %v", b, err)
	}
	if fi, err := files.Stat(filepath.Join(dir, "a")); err != nil || !fi.IsDir() {
		t.Fatalf("stat of the made directory: %v %v", fi, err)
	}
	if _, err := files.ReadFile(filepath.Join(dir, "a"), 10); !executor.ErrIsDir(err) {
		t.Fatalf("read of a directory: %v, want is a directory", err)
	}
	if err := files.WriteFile(filepath.Join(dir, "a"), []byte("x")); !executor.ErrIsDir(err) {
		t.Fatalf("write over a directory: %v, want is a directory", err)
	}
	entries, err := files.ReadDir(filepath.Join(dir, "a", "b"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "c.txt" {
		t.Fatalf("readdir: %v %v", entries, err)
	}
}
