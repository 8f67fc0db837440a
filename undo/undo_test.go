package undo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
	"github.com/dsh-acp/dsh-acp/undo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hostFiles is an executor whose file operations are the host's.
type hostFiles struct{}

func (hostFiles) Files(executor.FileAccess) (executor.Files, error) { return executor.HostFiles{}, nil }

// journal is a ChangeLog in memory: records newest last.
type journal struct{ recs []tools.ChangeRecord }

func (j *journal) Last(n int) []tools.ChangeRecord {
	var out []tools.ChangeRecord
	for i := len(j.recs) - 1; i >= 0 && len(out) < n; i-- {
		if j.recs[i].Undid > 0 {
			return []tools.ChangeRecord{j.recs[i]}
		}
		out = append(out, j.recs[i])
	}
	return out
}

func (j *journal) Undone(rec tools.ChangeRecord) bool { j.recs = append(j.recs, rec); return true }

func (j *journal) Redone() bool { j.recs = j.recs[:len(j.recs)-1]; return true }

// edit is the record of a call that changed path from before to after.
func edit(id, path, before, after string) tools.ChangeRecord {
	return tools.ChangeRecord{CallID: id, Title: "edit " + id, Files: []tools.FileChange{{Path: path, Existed: true, Exists: true,
		Before: &before, AfterSize: int64(len(after)), AfterSum: bashtool.TextSum(after)}}}
}

// undoOnce runs /undo arg and returns what it said, and how many times it
// asked the user (each answered with allow).
func undoOnce(t *testing.T, u *undo.Undoer, j *journal, cwd, arg string, allow bool) (said string, asked int) {
	t.Helper()
	return undoAnswered(t, u, j, cwd, arg, agent.Approval{Allowed: allow})
}

// undoAnswered is undoOnce with each question answered ans.
func undoAnswered(t *testing.T, u *undo.Undoer, j *journal, cwd, arg string, ans agent.Approval) (said string, asked int) {
	t.Helper()
	approver := agent.ApproverFunc(func(_ context.Context, c agent.CallInfo) (agent.Approval, error) {
		if c.Call.Subject.Kind != tools.Confirm {
			return agent.Approval{Allowed: true}, nil
		}
		asked++
		return ans, nil
	})
	u.Undo(context.Background(), agent.UndoRequest{Caller: tools.Caller{SessionID: "s", Cwd: cwd}, Arg: arg, Changes: j, Approver: approver,
		Emit: func(e agent.Event) {
			if e.Kind == agent.EventText {
				said += e.Text
			}
		}})
	return said, asked
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Two calls that changed one file, undone together: each step is checked
// against what the step before left, so nothing is "changed since" and
// nobody is asked; the file gets its text from before the first call.
func TestUndoTwoChangesOfOneFile(t *testing.T) {
	cwd := t.TempDir()
	path := filepath.Join(cwd, "f.txt")
	if err := os.WriteFile(path, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &journal{recs: []tools.ChangeRecord{edit("c1", path, "v0\n", "v1\n"), edit("c2", path, "v1\n", "v2\n")}}
	u, err := undo.New(undo.Options{Executor: hostFiles{}})
	if err != nil {
		t.Fatal(err)
	}
	said, asked := undoOnce(t, u, j, cwd, "2", true)
	if asked != 0 || read(t, path) != "v0\n" {
		t.Errorf("asked %d times, f.txt = %q; want 0, v0 (said %q)", asked, read(t, path), said)
	}
	if !strings.Contains(said, "f.txt (its text before the change put back)") {
		t.Errorf("said %q", said)
	}
	// The /undo's record holds the file as both calls left it.
	said, asked = undoOnce(t, u, j, cwd, "", true)
	if asked != 0 || read(t, path) != "v2\n" || len(j.recs) != 2 {
		t.Errorf("after the /undo of the /undo: asked %d, f.txt = %q, %d records; said %q", asked, read(t, path), len(j.recs), said)
	}
}

// A file changed since: asked once, naming it; rejected, no file is
// touched, also those not changed since; allowed, all are put back.
func TestUndoChangedSinceAsksOnce(t *testing.T) {
	cwd := t.TempDir()
	a, b := filepath.Join(cwd, "a.txt"), filepath.Join(cwd, "b.txt")
	for path, text := range map[string]string{a: "a1\n", b: "the user's\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := edit("c1", a, "a0\n", "a1\n")
	rec.Files = append(rec.Files, edit("c1", b, "b0\n", "b1\n").Files...)
	j := &journal{recs: []tools.ChangeRecord{rec}}
	u, err := undo.New(undo.Options{Executor: hostFiles{}})
	if err != nil {
		t.Fatal(err)
	}
	said, asked := undoOnce(t, u, j, cwd, "", false)
	if asked != 1 || read(t, a) != "a1\n" || read(t, b) != "the user's\n" || len(j.recs) != 1 {
		t.Errorf("rejected: asked %d, a = %q, b = %q, %d records", asked, read(t, a), read(t, b), len(j.recs))
	}
	if !strings.Contains(said, "Nothing was undone") || !strings.Contains(said, "b.txt") || strings.Contains(said, "a.txt") {
		t.Errorf("rejected: said %q, want nothing undone, naming b.txt alone", said)
	}
	// No one to ask (exec without a terminal): nobody chose anything.
	said, _ = undoAnswered(t, u, j, cwd, "", agent.Approval{Unattended: true})
	if !strings.Contains(said, "no one could be asked") || strings.Contains(said, "you chose") || read(t, b) != "the user's\n" {
		t.Errorf("unattended: said %q, b = %q", said, read(t, b))
	}
	_, asked = undoOnce(t, u, j, cwd, "", true)
	if asked != 1 || read(t, a) != "a0\n" || read(t, b) != "b0\n" {
		t.Errorf("allowed: asked %d, a = %q, b = %q", asked, read(t, a), read(t, b))
	}
}

// /undo with nothing to undo, and a count that is not one, say so and
// touch nothing.
func TestUndoNothingAndBadCount(t *testing.T) {
	u, err := undo.New(undo.Options{Executor: hostFiles{}})
	if err != nil {
		t.Fatal(err)
	}
	j := &journal{}
	for arg, want := range map[string]string{"": "Nothing to undo", "0": "Usage: /undo [N]", "two": "Usage: /undo [N]", "1001": "Usage: /undo [N]"} {
		if said, _ := undoOnce(t, u, j, t.TempDir(), arg, true); !strings.HasPrefix(said, want) {
			t.Errorf("/undo %s said %q, want %q…", arg, said, want)
		}
	}
}
