//go:build linux

package changes

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// What each event makes of a refresh: a directory to read again, or one
// whole walk when the events cannot say what changed.
func TestEventNote(t *testing.T) {
	t.Parallel()
	wt := &watcher{wds: map[int]string{1: "", 2: "a", 3: "a/b"}, dirs: map[string]dirWatch{}}
	cases := []struct {
		ev     event
		dirty  string
		rewalk bool
	}{
		{event{wd: 2, mask: unix.IN_MODIFY, name: "f.go"}, "a", false},
		{event{wd: 3, mask: unix.IN_DELETE_SELF}, "a", false},
		{event{wd: 9, mask: unix.IN_CREATE, name: "x"}, "", false},
		{event{wd: -1, mask: unix.IN_Q_OVERFLOW}, "", true},
		{event{wd: 2, mask: unix.IN_CLOSE_WRITE, name: ".gitignore"}, "", true},
		{event{wd: 1, mask: unix.IN_MOVE_SELF}, "", true},
	}
	for _, c := range cases {
		dirty := map[string]bool{}
		err := wt.note(c.ev, dirty)
		if got := errors.Is(err, errRewalk); got != c.rewalk {
			t.Errorf("%+v: rewalk %v (%v), want %v", c.ev, got, err, c.rewalk)
		}
		if c.dirty != "" && (len(dirty) != 1 || !dirty[c.dirty]) {
			t.Errorf("%+v: dirty %v, want %q", c.ev, dirty, c.dirty)
		}
		if c.dirty == "" && len(dirty) != 0 {
			t.Errorf("%+v: dirty %v, want none", c.ev, dirty)
		}
	}
	// The watch of a deleted directory is gone; its parent's event drops it.
	if err := wt.note(event{wd: 3, mask: unix.IN_IGNORED}, map[string]bool{}); err != nil || wt.wds[3] != "" {
		t.Errorf("IN_IGNORED: %v, wds %v", err, wt.wds)
	}
}

func TestParseEvents(t *testing.T) {
	t.Parallel()
	var buf []byte
	add := func(wd int32, mask uint32, name string) {
		rec := make([]byte, unix.SizeofInotifyEvent)
		padded := 0
		if name != "" {
			padded = (len(name) + 16) &^ 15
		}
		binary.NativeEndian.PutUint32(rec[0:], uint32(wd))
		binary.NativeEndian.PutUint32(rec[4:], mask)
		binary.NativeEndian.PutUint32(rec[12:], uint32(padded))
		name += string(make([]byte, padded-len(name)))
		buf = append(append(buf, rec...), name...)
	}
	add(4, unix.IN_CREATE, "new.txt")
	add(5, unix.IN_DELETE_SELF, "")
	got, err := parseEvents(buf, nil)
	if err != nil || len(got) != 2 || got[0] != (event{wd: 4, mask: unix.IN_CREATE, name: "new.txt"}) || got[1] != (event{wd: 5, mask: unix.IN_DELETE_SELF}) {
		t.Errorf("parseEvents = %+v, %v", got, err)
	}
	if _, err := parseEvents(buf[:20], nil); err == nil {
		t.Error("a cut event parsed")
	}
}
