package changes_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/changes"
)

// BeginAll measures a session's roots as one: what a command changed in
// any of them, sorted by path; a root inside another is measured once,
// with it; a Discarded Mark of several trees measures nothing after.
func TestBeginAllMeasuresEveryRoot(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	cwd, second := filepath.Join(top, "b-cwd"), filepath.Join(top, "a-second")
	inner := filepath.Join(cwd, "inner")
	write(t, filepath.Join(cwd, "x.txt"), "x\n")
	write(t, filepath.Join(second, "y.txt"), "y\n")
	write(t, filepath.Join(inner, "z.txt"), "z\n")
	tr := changes.New(changes.Options{})
	t.Cleanup(tr.Close)

	m := tr.BeginAll("s", cwd, second, inner, second)
	if m == nil {
		t.Fatal("BeginAll = nil")
	}
	run(t, cwd, "echo X >> x.txt && echo Y >> ../a-second/y.txt && echo new > ../a-second/n.txt && echo Z >> inner/z.txt")
	var got []string
	for _, c := range m.End() {
		got = append(got, summary(top, c))
	}
	want := []string{
		`created a-second/n.txt new="new\n"`,
		`modified a-second/y.txt old="y\n" new="y\nY\n"`,
		`modified b-cwd/inner/z.txt old="z\n" new="z\nZ\n"`,
		`modified b-cwd/x.txt old="x\n" new="x\nX\n"`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}

	// The next command is measured against what the last one left.
	m = tr.BeginAll("s", cwd, second)
	run(t, second, "rm n.txt")
	got = nil
	for _, c := range m.End() {
		got = append(got, summary(top, c))
	}
	if d := cmp.Diff([]string{`deleted a-second/n.txt old="new\n"`}, got); d != "" {
		t.Errorf("second command's changes (-want +got):\n%s", d)
	}
	tr.BeginAll("s", cwd, second).Discard()

	// One root is Begin itself.
	if one := tr.BeginAll("s", cwd); one == nil || len(one.End()) != 0 {
		t.Error("BeginAll of one root: nil or changes where none were made")
	}
}
