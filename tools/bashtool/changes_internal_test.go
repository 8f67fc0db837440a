package bashtool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/changes"
)

func TestChangeLines(t *testing.T) {
	t.Parallel()
	big := changes.Side{Size: 300 << 10}
	bigger := changes.Side{Size: 310<<10 + 1}
	bin := changes.Side{Size: 10, Binary: true}
	cases := []struct {
		c    changes.Change
		want string
	}{
		{changes.Change{Path: "/p/a.png", Op: changes.Modified, Old: bin, New: bin}, "/p/a.png: binary file changed"},
		{changes.Change{Path: "/p/a.png", Op: changes.Created, New: bin}, "/p/a.png: binary file created"},
		{changes.Change{Path: "/p/a.png", Op: changes.Deleted, Old: bin}, "/p/a.png: binary file deleted"},
		{changes.Change{Path: "/p/big.txt", Op: changes.Modified, Old: big, New: bigger}, "/p/big.txt: 300 KiB → 311 KiB"},
		{changes.Change{Path: "/p/big.txt", Op: changes.Created, New: big}, "/p/big.txt: created (300 KiB)"},
		{changes.Change{Path: "/p/big.txt", Op: changes.Deleted, Old: big}, "/p/big.txt: deleted (300 KiB)"},
	}
	for _, c := range cases {
		got, _ := shownChanges([]changes.Change{c.c})
		if len(got) != 1 || got[0].Line != c.want || got[0].Path != c.c.Path {
			t.Errorf("%v: got %+v, want line %q", c.c.Op, got, c.want)
		}
	}
}

func TestFirstChangedLine(t *testing.T) {
	t.Parallel()
	text := func(s string) changes.Side { return changes.Side{Text: s, Known: true, Size: int64(len(s))} }
	cases := []struct {
		old, cur changes.Side
		want     int
	}{
		{changes.Side{}, text("new\n"), 0},
		{text("a\nb\nc\n"), text("a\nb\nC\n"), 2},
		{text("a\nb\n"), text("a\nb\nc\n"), 2},
		{text("a\n"), text("z\n"), 0},
	}
	for _, c := range cases {
		op := changes.Modified
		if !c.old.Known {
			op = changes.Created
		}
		_, locs := shownChanges([]changes.Change{{Path: "/p/f", Op: op, Old: c.old, New: c.cur}})
		if len(locs) != 1 || locs[0].Line == nil || *locs[0].Line != c.want {
			t.Errorf("%q → %q: locations %+v, want line %d", c.old.Text, c.cur.Text, locs, c.want)
		}
	}
	// A deleted file is not a location (there is nothing to open).
	if _, locs := shownChanges([]changes.Change{{Path: "/p/f", Op: changes.Deleted, Old: text("x\n")}}); len(locs) != 0 {
		t.Errorf("deleted file: locations %+v, want none", locs)
	}
}

// Twenty-five files of 100 KiB rewritten: what one call stores stays under
// 1 MiB, the files past the budget shown by their sizes.
func TestDiffBudget(t *testing.T) {
	t.Parallel()
	var cs []changes.Change
	for i := range 25 {
		old := strings.Repeat("old <line>\n", 100<<10/11)
		cur := strings.Repeat("new <line>\n", 100<<10/11)
		cs = append(cs, changes.Change{Path: fmt.Sprintf("/p/f%02d", i), Op: changes.Modified,
			Old: changes.Side{Text: old, Known: true, Size: int64(len(old))},
			New: changes.Side{Text: cur, Known: true, Size: int64(len(cur))}})
	}
	shown, locs := shownChanges(cs)
	if len(shown) != maxShownFiles+1 || shown[maxShownFiles].Line != "… and 5 more files changed" {
		t.Fatalf("%d entries, last %+v", len(shown), shown[len(shown)-1])
	}
	if len(locs) != maxShownFiles {
		t.Errorf("%d locations, want %d", len(locs), maxShownFiles)
	}
	b, err := json.Marshal(shown)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20 {
		t.Errorf("the shown changes encode to %d bytes, over 1 MiB", len(b))
	}
	// Each side encodes to about 200 KiB ("<" is escaped as \u003c), so
	// the budget holds one file in full and not two.
	if shown[0].OldText == nil || shown[1].Line != "/p/f01: 100 KiB → 100 KiB" {
		t.Errorf("shown %q then %q: want a diff first and sizes once over the budget", shown[0].Path, shown[1].Line)
	}
}

func TestJSONLen(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a\"b\\c\n\r\t", "<a href=x>&</a>", "\x01\x1f", "é😀\u2028\u2029", "\xff"} {
		b, _ := json.Marshal(s)
		if got := jsonLen(s); got != len(b) {
			t.Errorf("jsonLen(%q) = %d, want %d (%s)", s, got, len(b), b)
		}
	}
}
