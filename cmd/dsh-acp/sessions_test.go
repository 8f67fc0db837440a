package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// A session exec started is listed by dsh-acp sessions and continued by
// exec --resume: the model's second request carries the first turn.
func TestSessionsAndResume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	getenv := stateEnv(t)
	dir := t.TempDir()
	script := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(script, []byte(`{"text":"First answer."}`+"\n"+`{"text":"Second answer."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "record.jsonl")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"exec", "--script", script, "--cwd", dir, "remember the number 42"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exec: %d %s", code, errb.String())
	}
	out.Reset()
	if code := run(ctx, []string{"sessions", "--cwd", dir}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("sessions: %d %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "remember the number 42") || !strings.HasSuffix(lines[1], dir) {
		t.Fatalf("sessions printed:\n%s", out.String())
	}
	id := strings.Fields(lines[1])[0]
	// A second script: a new process starts the turns again.
	if err := os.WriteFile(script, []byte(`{"text":"It was 42."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(ctx, []string{"exec", "--script", script, "--script-record", record, "--resume", id, "which number?"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exec --resume: %d %s", code, errb.String())
	}
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), "remember the number 42") || !strings.Contains(string(rec), "First answer.") || !strings.Contains(string(rec), dir) {
		t.Errorf("the resumed request lacks the first turn or its cwd:\n%s", rec)
	}
	if code := run(ctx, []string{"exec", "--script", script, "--resume", "no-such-session", "x"}, nil, &out, &errb, getenv); code != 1 || !strings.Contains(errb.String(), "not found") {
		t.Errorf("resume of an unknown session: exit %d, stderr %q", code, errb.String())
	}
}

// exec --resume keeps the other project roots stored with the session: a
// resume's request gives the whole list, and one without them would drop
// them. The resumed request's system prompt names them.
func TestResumeKeepsRoots(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	getenv := stateEnv(t)
	cwd, lib := t.TempDir(), t.TempDir()
	st, err := store.New(store.Options{Dir: getenv("DSH_STATE_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	const id = "7f1d1c9e-5b0a-4c1e-9a57-3f2c4d5e6f70"
	sess, err := st.Create(id, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(store.Roots{Roots: []string{lib}}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(sess.Sync(), sess.Close()); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(script, []byte(`{"text":"Both."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "record.jsonl")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"exec", "--script", script, "--script-record", record, "--resume", id, "which roots?"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("exec --resume: %d %s", code, errb.String())
	}
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), "Other project roots: "+lib+" (") {
		t.Errorf("the resumed request does not name the stored root %s:\n%s", lib, rec)
	}
	sess, err = st.OpenState(id)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if got := sess.State().Roots; len(got) != 1 || got[0] != lib {
		t.Errorf("stored roots after the resume: %q, want [%s]", got, lib)
	}
}
