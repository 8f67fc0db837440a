package docker

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// helperRun drives HelperMain in this process over two pipes: the helper
// runs bash on the host, which is all these tests need of it.
type helperRun struct {
	t    *testing.T
	in   *io.PipeWriter
	fw   *frameWriter
	fr   *frameReader
	done chan int
}

func startHelper(t *testing.T) *helperRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &helperRun{t: t, in: inW, fw: newFrameWriter(inW), fr: newFrameReader(outR), done: make(chan int, 1)}
	go func() {
		code := HelperMain([]string{"--grace", "200ms"}, inR, outW, io.Discard)
		outW.Close()
		h.done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // the helper's last frames, if any are unread
		select {
		case <-h.done:
		case <-time.After(time.Minute):
			t.Error("the helper did not end after its stdin closed")
		}
	})
	return h
}

// start sends the start of one command. The tether is an unbuffered pipe
// both ways: a test that sends many starts does it beside its reading.
func (h *helperRun) start(id uint32, command, dir string) error {
	req, err := json.Marshal(executor.StartRequest{Command: command, Dir: dir, Env: os.Environ()})
	if err != nil {
		return err
	}
	return h.fw.write(kindStart, id, req)
}

// TestExitFollowsOutput: the exit frame of a command comes after every byte
// the shell wrote. The agent stops reading a command's output a short grace
// after its exit, so output sent after the exit frame can be lost on a busy
// machine (it was, in CI: "(no output)" for a command that printed a line).
func TestExitFollowsOutput(t *testing.T) {
	h := startHelper(t)
	const n = 200
	const line = "A done, with a line long enough to be more than one small read\n"
	dir := t.TempDir()
	sent := make(chan error, 1)
	go func() {
		for i := uint32(1); i <= n; i++ {
			if err := h.start(i, "printf '"+strings.TrimSuffix(line, "\n")+"\\n'; printf 'err\\n' >&2", dir); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	defer func() {
		if err := <-sent; err != nil {
			t.Errorf("send a start: %v", err)
		}
	}()
	out := map[uint32]*strings.Builder{}
	errs := map[uint32]*strings.Builder{}
	exited := 0
	for exited < n {
		f, err := h.fr.read()
		if err != nil {
			t.Fatalf("after %d exits: %v", exited, err)
		}
		switch f.kind {
		case kindFailed:
			t.Fatalf("command %d did not start: %s", f.id, f.payload)
		case kindStdout, kindStderr:
			m := out
			if f.kind == kindStderr {
				m = errs
			}
			if m[f.id] == nil {
				m[f.id] = &strings.Builder{}
			}
			m[f.id].Write(f.payload)
		case kindExit:
			exited++
			got, gotErr := text(out[f.id]), text(errs[f.id])
			if got != line || gotErr != "err\n" {
				t.Errorf("command %d: exit frame after stdout %q, stderr %q; want %q and %q before it", f.id, got, gotErr, line, "err\n")
			}
			if ws := binary.BigEndian.Uint32(f.payload); ws != 0 {
				t.Errorf("command %d: wait status %#x", f.id, ws)
			}
		}
	}
}

// TestExitNotHeldByLeftover: catching up with the output does not wait for
// the end of a pipe that a leftover of the command still holds.
func TestExitNotHeldByLeftover(t *testing.T) {
	h := startHelper(t)
	if err := h.start(1, "echo before; sleep 600 & echo after", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for {
		f, err := h.fr.read()
		if err != nil {
			t.Fatal(err)
		}
		if f.kind == kindOutEOF {
			t.Fatal("stdout ended while the leftover sleep holds it")
		}
		if f.kind == kindStdout {
			got.Write(f.payload)
		}
		if f.kind == kindExit {
			break
		}
	}
	if got.String() != "before\nafter\n" {
		t.Fatalf("stdout before the exit frame: %q", got.String())
	}
}

func text(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	return b.String()
}
