package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/execclient"
)

// openPTY opens a pseudo-terminal pair: what is written to tty can be read
// from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(pty.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		pty.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		pty.Close()
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		pty.Close()
		t.Fatalf("open tty: %v", err)
	}
	return pty, tty
}

// TestExecWaitingNotice: with stderr on a terminal, exec says it is waiting
// once the model has been silent for 2 s, with the seconds counted on the
// same line, rewritten in place; the line is erased when the answer
// comes. The endpoint answers only after the count reached 3 s on the
// terminal.
func TestExecWaitingNotice(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pty, tty := openPTY(t)
	defer pty.Close()

	seen := make(chan struct{})
	readDone := make(chan struct{})
	var got []byte
	go func() {
		defer close(readDone)
		buf := make([]byte, 512)
		told := false
		for {
			n, err := pty.Read(buf)
			got = append(got, buf[:n]...)
			if !told && bytes.Contains(got, []byte("\r"+ansiDim+"waiting for the model… 3s"+ansiReset+"\x1b[K")) {
				close(seen)
				told = true
			}
			if err != nil {
				// EIO once the terminal side is closed.
				return
			}
		}
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-seen:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"hello there"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	var out bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"exec", "--base-url", srv.URL + "/v1", "--cwd", t.TempDir(), "hi"}, nil, &out, tty, noEnv)
	select {
	case <-seen:
	default:
		t.Error("no waiting notice on the terminal")
	}
	if code != 0 {
		t.Fatalf("exit %d; stdout:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "hello there") {
		t.Errorf("answer missing from stdout:\n%s", out.String())
	}
	if d := time.Since(start); d < execclient.ModelSilence {
		t.Errorf("answered after %v, before the notice could be due", d)
	}
	tty.Close()
	<-readDone
	shown := string(got)
	if !strings.Contains(shown, "\r"+ansiDim+"waiting for the model… 2s"+ansiReset+"\x1b[K") || strings.Count(shown, "waiting for the model") < 2 {
		t.Errorf("the count was not rewritten in place: %q", shown)
	}
	if !strings.HasSuffix(shown, "\r\x1b[K") {
		t.Errorf("the waiting line was not erased when the answer came: %q", shown)
	}
}
