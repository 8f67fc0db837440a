package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cooked reports whether the terminal is back in line mode with echo, as
// a shell needs it.
func cooked(t *testing.T, term *terminal) bool {
	t.Helper()
	st, err := unix.IoctlGetTermios(int(term.tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return st.Lflag&unix.ICANON != 0 && st.Lflag&unix.ECHO != 0 && st.Lflag&unix.ISIG != 0
}

// TestExecOneKey: one key answers the question, with no Enter: Enter
// alone is the default (yes), Ctrl-C pressed at the question interrupts
// the run (exit 130), Ctrl-D leaves it unanswered (not run; the model is
// told the request was cancelled). The terminal is in line mode again
// after each, whichever way the run ended.
func TestExecOneKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, key string
		code      int
		ran       bool
	}{
		{"Enter is yes", "\r", 0, true},
		{"y", "y", 0, true},
		{"Ctrl-C", "\x03", 130, false},
		{"Ctrl-D", "\x04", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			script := writeScript(t, bashCall("", "echo one-key-ran"), `{"text":"Done."}`)
			term := newTerminal(t)
			_, done := startOnTerminal(t, term, []string{"DSH_STATE_DIR=" + t.TempDir(), "NO_COLOR=1"}, nil, "exec", "--script", script, "--cwd", t.TempDir(), "go")
			term.waitFor(ctx, "[n] no ")
			if cooked(t, term) {
				t.Error("the terminal is in line mode while the question waits: one key would not answer")
			}
			term.typeKey(c.key)
			code := waitExit(ctx, t, done)
			if ran := strings.Contains(term.shown(), "\r\none-key-ran\r\n"); code != c.code || ran != c.ran {
				t.Errorf("exit %d (want %d), ran %v:\n%q", code, c.code, ran, term.shown())
			}
			if !cooked(t, term) {
				t.Error("the terminal was left in raw mode")
			}
		})
	}
}
