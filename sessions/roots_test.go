package sessions_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// A root that is not an absolute path of an existing directory is an
// error that names it, and nothing is stored or registered; the roots kept
// are cleaned, once each, without the cwd itself.
func TestCreateChecksRoots(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	cwd, other := t.TempDir(), t.TempDir()
	file := filepath.Join(other, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root, says string
	}{
		{filepath.Join(other, "missing"), "does not exist"},
		{file, "is not a directory"},
		{"relative/dir", "is not an absolute path"},
		{"", "is empty"},
	} {
		_, err := reg.Create(cwd, []string{other, tc.root})
		if !errors.Is(err, sessions.ErrInvalidRoot) || !strings.Contains(err.Error(), tc.root) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Create with root %q: %v; want ErrInvalidRoot naming it, saying %q", tc.root, err, tc.says)
		}
	}
	if n := reg.Len(); n != 0 {
		t.Errorf("%d sessions registered after refused creates", n)
	}
	if page, err := st.List(store.ListOptions{}); err != nil || len(page.Sessions) != 0 {
		t.Errorf("stored after refused creates: %+v, %v", page.Sessions, err)
	}

	s, err := reg.Create(cwd, []string{other + "/", cwd, other})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Roots(); !slices.Equal(got, []string{other}) {
		t.Errorf("roots %q, want [%s]", got, other)
	}
	reg.CloseAll()
}

// The roots are stored with the session and listed; a load takes the
// roots its request gives (none too), a load of a live session as well,
// and a fork the roots of its own request.
func TestRootsStoredLoadedForked(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cwd, r1, r2 := t.TempDir(), t.TempDir(), t.TempDir()
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(cwd, []string{r1, r2})
	if err != nil {
		t.Fatal(err)
	}
	s.Sync()
	listed := func(reg *sessions.Registry, id string) []string {
		t.Helper()
		page, err := reg.List("", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range page.Sessions {
			if info.ID == id {
				return info.Roots
			}
		}
		t.Fatalf("session %s not listed", id)
		return nil
	}
	if got := listed(reg, s.ID); !slices.Equal(got, []string{r1, r2}) {
		t.Errorf("listed roots %q, want [%s %s]", got, r1, r2)
	}
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}

	reg2 := sessions.New(sessions.Options{Store: st})
	if got := listed(reg2, s.ID); !slices.Equal(got, []string{r1, r2}) {
		t.Errorf("roots listed by another process %q, want [%s %s]", got, r1, r2)
	}
	if _, err := reg2.Open(s.ID, cwd, []string{filepath.Join(r1, "gone")}); !errors.Is(err, sessions.ErrInvalidRoot) {
		t.Errorf("load with a missing root: %v, want ErrInvalidRoot", err)
	}
	l, err := reg2.Open(s.ID, cwd, []string{r2})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Session.Roots(); !slices.Equal(got, []string{r2}) {
		t.Errorf("roots after a load with [%s]: %q", r2, got)
	}
	again, err := reg2.Open(s.ID, cwd, nil)
	if err != nil || !again.WasLive {
		t.Fatalf("load of the live session: %+v, %v", again, err)
	}
	if got := l.Session.Roots(); len(got) != 0 {
		t.Errorf("roots after a load with none: %q", got)
	}
	f, err := reg2.Fork(s.ID, cwd, []string{r1})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Roots(); !slices.Equal(got, []string{r1}) {
		t.Errorf("fork's roots %q, want [%s]", got, r1)
	}
	reg2.CloseAll()

	reg3 := sessions.New(sessions.Options{Store: st})
	if got := listed(reg3, s.ID); len(got) != 0 {
		t.Errorf("stored roots after a load with none: %q", got)
	}
	if got := listed(reg3, f.ID); !slices.Equal(got, []string{r1}) {
		t.Errorf("the fork's stored roots %q, want [%s]", got, r1)
	}
}
