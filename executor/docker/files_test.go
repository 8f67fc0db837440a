package docker_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

// A remote engine (a tcp:// listener in front of the test engine): the
// file operations are the helper's, in the container's files, under the
// policy the local engine's get on this side.
func TestRemoteEngineFiles(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	addr := dockertest.TCPProxy(t, eng.Host)
	var read []string
	if eng.Hidden != "" {
		// The engine's host has its own (empty) directory there: what the
		// container sees of it is not what this host has.
		read = []string{eng.Hidden}
	}
	s := newSetupRead(t, setupOpts{host: "tcp://" + addr}, read)
	if s.ex.FilesAreHosts() {
		t.Error("FilesAreHosts with a remote engine: the editor's files would be taken for the container's")
	}
	x, err := s.ex.Files(executor.FileAccess{Owner: "s", Root: s.cwd})
	if err != nil {
		t.Fatal(err)
	}
	// Before any command: the operation makes the container.
	if err := x.WriteFile(filepath.Join(s.cwd, "sub/a.txt"), []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if res := s.runCmd(t, "s", "cat sub/a.txt; printf 'from the container' > b.txt; ln -s b.txt in; ln -s /etc/passwd out; mkdir d; ln -s d dl; seq 1 1000 > big"); res.Stdout.Text != "hello\n" {
		t.Fatalf("the container reads %q; want what the file operation wrote", res.Stdout.Text)
	}
	for name, want := range map[string]string{"b.txt": "from the container", "in": "from the container"} {
		if data, err := x.ReadFile(filepath.Join(s.cwd, name), 1<<20); err != nil || string(data) != want {
			t.Errorf("read %s: %q, %v; want %q", name, data, err, want)
		}
	}
	data, err := x.ReadFile(filepath.Join(s.cwd, "big"), 4)
	if !errors.Is(err, executor.ErrTooLarge) || string(data) != "1\n2\n" {
		t.Errorf("read big with max 4: %q, %v; want its first 4 bytes and ErrTooLarge", data, err)
	}
	if _, err := x.ReadFile(filepath.Join(s.cwd, "d"), 1<<20); !executor.ErrIsDir(err) {
		t.Errorf("read a directory: %v; want ErrIsDir", err)
	}
	if _, err := x.ReadFile(filepath.Join(s.cwd, "none"), 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read a missing file: %v; want ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := x.ReadFile(filepath.Join(s.cwd, "out"), 1<<20); !errors.As(err, &pe) || pe.Op != "read" || !strings.Contains(err.Error(), "the session's container does not see it") {
		t.Errorf("read through a link out of the session's directory: %v; want the policy's refusal", err)
	}
	if err := x.WriteFile(filepath.Join(s.cwd, "out"), []byte("x")); err == nil || !strings.Contains(err.Error(), "the session's container does not write it") {
		t.Errorf("write through a link out of the session's directory: %v; want the policy's refusal", err)
	}
	if err := x.WriteFile(filepath.Join(s.cwd, "d"), []byte("x")); !executor.ErrIsDir(err) {
		t.Errorf("write a directory: %v; want ErrIsDir", err)
	}
	if fi, err := x.Stat(filepath.Join(s.cwd, "dl")); err != nil || !fi.IsDir() || fi.Name() != "d" {
		t.Errorf("stat a link to a directory: %v, %v; want the directory d", fi, err)
	}
	if fi, err := x.Stat(filepath.Join(s.cwd, "big")); err != nil || fi.Size() != 3893 || !fi.Mode().IsRegular() || fi.ModTime().IsZero() {
		t.Errorf("stat big: %v, %v; want a regular file of 3893 bytes with a time", fi, err)
	}
	ents, err := x.ReadDir(s.cwd)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		info, err := e.Info()
		if err != nil || info.Name() != e.Name() || info.Mode().Type() != e.Type() {
			t.Errorf("entry %s: info %v, %v; want its lstat", e.Name(), info, err)
		}
		if e.Name() == "in" && e.Type()&fs.ModeSymlink == 0 {
			t.Errorf("entry in: type %v; want a link", e.Type())
		}
	}
	slices.Sort(names)
	if want := []string{"b.txt", "big", "d", "dl", "in", "out", "sub"}; !slices.Equal(names, want) {
		t.Errorf("read dir: %v; want %v", names, want)
	}
	if eng.Hidden == "" {
		return
	}
	// This host has a file there; the engine's host has not.
	f, err := os.CreateTemp(eng.Hidden, "only-here-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := x.ReadFile(f.Name(), 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read %s, which only this host has: %v; want ErrNotExist (the container's files)", f.Name(), err)
	}
}

// A remote engine whose host lacks the session's directory: a file
// operation says so, as a command does.
func TestRemoteEngineFilesWithoutTheCwd(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	if eng.Hidden == "" {
		t.Skip("DSH_TEST_DOCKER_HIDDEN not set: no directory the engine's host lacks")
	}
	cwd, err := os.MkdirTemp(eng.Hidden, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cwd) })
	if err := os.WriteFile(filepath.Join(cwd, "a"), []byte("here"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := dockertest.TCPProxy(t, eng.Host)
	s := newSetup(t, setupOpts{host: "tcp://" + addr, cwd: cwd})
	x, err := s.ex.Files(executor.FileAccess{Owner: "s", Root: cwd})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.ReadFile(filepath.Join(cwd, "a"), 1<<20)
	want := "the session's directory " + cwd + " does not exist on the Docker engine's host (tcp://" + addr + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("read: %v; want an error saying %q", err, want)
	}
}

// A remote engine: the helper's file operations allow the session's other
// roots as its directory, in the same container as its commands (a
// command sees what a file operation wrote there), and refuse a tree
// that is not one of them.
func TestRemoteEngineFilesInOtherRoots(t *testing.T) {
	t.Parallel()
	eng := dockertest.Need(t)
	addr := dockertest.TCPProxy(t, eng.Host)
	s := newSetup(t, setupOpts{host: "tcp://" + addr})
	lib, other := t.TempDir(), t.TempDir()
	x, err := s.ex.Files(executor.FileAccess{Owner: "s", Root: s.cwd, Roots: []string{lib}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFile(filepath.Join(lib, "a.txt"), []byte("in lib\n")); err != nil {
		t.Fatalf("write in the other root: %v", err)
	}
	if err := x.WriteFile(filepath.Join(other, "a.txt"), []byte("x")); err == nil || !strings.Contains(err.Error(), "only the session's directories") {
		t.Errorf("write outside the roots: %v; want the policy's refusal naming the session's directories", err)
	}
	res, err := s.ex.Run(t.Context(), executor.Spec{Owner: "s", Root: s.cwd, Roots: []string{lib}, Workdir: s.cwd, Command: "cat " + lib + "/a.txt"})
	if err != nil || res.Stdout.Text != "in lib\n" {
		t.Errorf("the session's command reads %+v, %v; want what the file operation wrote in the other root", res, err)
	}
}
