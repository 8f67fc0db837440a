package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is a pseudo-terminal whose output a test waits on.
type terminal struct {
	t   *testing.T
	ptm *os.File
	tty *os.File

	mu   sync.Mutex
	seen bytes.Buffer
	more chan struct{}
	done chan struct{}
}

func newTerminal(t *testing.T) *terminal {
	t.Helper()
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	term := &terminal{t: t, ptm: ptm, tty: tty, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			term.mu.Lock()
			term.seen.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptm.Close()
		<-term.done
	})
	return term
}

// waitFor waits until the terminal has shown s, and returns all it showed.
func (term *terminal) waitFor(ctx context.Context, s string) string {
	term.t.Helper()
	for {
		term.mu.Lock()
		got := term.seen.String()
		term.mu.Unlock()
		if strings.Contains(got, s) {
			return got
		}
		select {
		case <-term.more:
		case <-ctx.Done():
			term.t.Fatalf("the terminal never showed %q; it showed:\n%q", s, got)
		}
	}
}

func (term *terminal) shown() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.seen.String()
}

// typeKey presses keys, with no Enter after them.
func (term *terminal) typeKey(s string) {
	term.t.Helper()
	if _, err := term.ptm.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := term.ptm.Write([]byte(s + "\n")); err != nil {
		term.t.Fatal(err)
	}
}

// startOnTerminal starts the binary with stdin (and stderr, and stdout
// unless out is given) on the terminal.
func startOnTerminal(t *testing.T, term *terminal, env []string, out io.Writer, args ...string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.tty, term.tty, term.tty
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, done
}

func waitExit(ctx context.Context, t *testing.T, done chan error) int {
	t.Helper()
	select {
	case err := <-done:
		done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-ctx.Done():
		t.Fatal("the program did not end")
		return -1
	}
}

// TestExecAsksOnTerminal: on a terminal exec asks before a command runs;
// [p] runs it and remembers it for the project (a second run is not
// asked), [n] refuses it. NO_COLOR keeps escape codes off the terminal.
func TestExecAsksOnTerminal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := t.TempDir()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, bashCall("", "echo hi-from-the-command"), `{"text":"Done."}`)
	env := []string{"DSH_STATE_DIR=" + state, "NO_COLOR=1"}

	term := newTerminal(t)
	_, done := startOnTerminal(t, term, env, nil, "exec", "--script", script, "--cwd", repo, "say hi")
	shown := term.waitFor(ctx, "[n] no ")
	for _, want := range []string{"Always allow `echo` commands in this project", "Run echo hi-from-the-command?", "[y] yes (Enter)  [a] always in this session  [p] always in this project  [n] no "} {
		if !strings.Contains(shown, want) {
			t.Errorf("the question lacks %q:\n%s", want, shown)
		}
	}
	term.typeKey("m")
	term.waitFor(ctx, "Please press one of the letters")
	term.typeKey("p")
	if code := waitExit(ctx, t, done); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.shown())
	}
	if out := term.shown(); !strings.Contains(out, "hi-from-the-command\r\n") || !strings.Contains(out, "Done.") || strings.Contains(out, "\x1b[") {
		t.Errorf("after [p] (NO_COLOR):\n%q", out)
	}

	// The rule holds for the next run in the project: nothing is asked.
	term2 := newTerminal(t)
	var out bytes.Buffer
	_, done = startOnTerminal(t, term2, env, &out, "exec", "--script", script, "--cwd", repo, "again")
	if code := waitExit(ctx, t, done); code != 0 || strings.Contains(term2.shown(), "[n] no") || !strings.Contains(out.String(), "hi-from-the-command") {
		t.Errorf("second run: exit %d, terminal %q, stdout %q", code, term2.shown(), out.String())
	}

	// Elsewhere it is asked again; [n] refuses, and every command refused
	// is exit 4. Without NO_COLOR the command line is bold.
	term3 := newTerminal(t)
	_, done = startOnTerminal(t, term3, []string{"DSH_STATE_DIR=" + state}, nil, "exec", "--script", script, "--cwd", t.TempDir(), "elsewhere")
	shown = term3.waitFor(ctx, "[n] no ")
	if !strings.Contains(shown, "\x1b[1m") {
		t.Errorf("no colour on a terminal without NO_COLOR: %q", shown)
	}
	term3.typeKey("n")
	if code := waitExit(ctx, t, done); code != 4 || strings.Contains(term3.shown(), "hi-from-the-command\r\n") {
		t.Errorf("after [n]: exit %d\n%q", code, term3.shown())
	}

	// Ctrl-C while the question waits ends the run, interrupted, at once.
	term4 := newTerminal(t)
	cmd, done := startOnTerminal(t, term4, []string{"DSH_STATE_DIR=" + state}, nil, "exec", "--script", script, "--cwd", t.TempDir(), "interrupted")
	term4.waitFor(ctx, "[n] no ")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(ctx, t, done); code != 130 {
		t.Errorf("Ctrl-C at the question: exit %d\n%q", code, term4.shown())
	}
}

// TestBareTerminalLine: dsh-acp started by hand on a terminal says, on
// stderr, what it is and what to use instead; then it serves as before.
func TestBareTerminalLine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	term := newTerminal(t)
	var out bytes.Buffer
	_, done := startOnTerminal(t, term, []string{"DSH_STATE_DIR=" + t.TempDir()}, &out, "--script", writeScript(t, `{"text":"x"}`))
	shown := term.waitFor(ctx, "\n")
	if first := strings.SplitN(shown, "\r\n", 2)[0]; first != bareTerminalLine {
		t.Errorf("first line on the terminal %q, want %q", first, bareTerminalLine)
	}
	term.typeLine(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	term.typeLine("\x04") // Ctrl-D: end of input, the server ends
	if code := waitExit(ctx, t, done); code != 0 || !strings.Contains(out.String(), `"protocolVersion":1`) {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
	if strings.Count(term.shown(), bareTerminalLine) != 1 || strings.Contains(term.shown(), "dsh-acp:") {
		t.Errorf("more than the one line on stderr: %q", term.shown())
	}
}

// TestNoLineWithoutTerminal: started by an editor (stdin a pipe), stderr
// stays quiet.
func TestNoLineWithoutTerminal(t *testing.T) {
	t.Parallel()
	var errb bytes.Buffer
	cmd := exec.Command(binPath, "--script", "x")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + t.TempDir()}
	cmd.Stdin = strings.NewReader("")
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil || strings.Contains(errb.String(), bareTerminalLine) {
		t.Errorf("err %v, stderr %q", err, errb.String())
	}
}

// TestExecAsksOnTheTerminal: exec asks before a command wherever a person
// watches a terminal, as ssh and git ask for a password. A prompt piped in
// (cat task.md | dsh-acp exec): the question on stderr, the answer read
// from the process's terminal. Stderr going to a file (2>log): the
// question on the terminal, not into the file, where nobody would see it
// and the run would seem to hang.
func TestExecAsksOnTheTerminal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// wire connects stdin and stderr; ctty is the fd that is the
		// controlling terminal in the child.
		wire func(cmd *exec.Cmd, tty *os.File, log *os.File)
		ctty int
		args []string
	}{
		{"piped prompt", func(cmd *exec.Cmd, tty, _ *os.File) {
			cmd.Stdin, cmd.Stderr = strings.NewReader("say hi from a pipe\n"), tty
		}, 2, nil},
		{"stderr to a file", func(cmd *exec.Cmd, tty, log *os.File) {
			cmd.Stdin, cmd.Stderr = tty, log
		}, 0, []string{"say hi"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			script := writeScript(t, bashCall("", "echo asked-and-ran"), `{"text":"Done."}`)
			term := newTerminal(t)
			log, err := os.Create(filepath.Join(t.TempDir(), "stderr.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			var out bytes.Buffer
			cmd := exec.Command(binPath, append([]string{"exec", "--script", script, "--cwd", t.TempDir()}, c.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm", "NO_COLOR=1", "DSH_STATE_DIR=" + t.TempDir()}
			cmd.Stdout = &out
			c.wire(cmd, term.tty, log)
			// The terminal is the child's controlling terminal, as it is
			// for a command typed at a shell.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: c.ctty}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-done
			})
			if shown := term.waitFor(ctx, "[n] no "); !strings.Contains(shown, "Run echo asked-and-ran?") {
				t.Errorf("the question lacks the command:\n%q", shown)
			}
			term.typeLine("y")
			if code := waitExit(ctx, t, done); code != 0 {
				b, _ := os.ReadFile(log.Name())
				t.Fatalf("exit %d\nterminal: %q\nstdout: %q\nstderr file: %q", code, term.shown(), out.String(), b)
			}
			if !strings.Contains(out.String(), "asked-and-ran\n") || !strings.Contains(out.String(), "Done.") {
				t.Errorf("the command did not run after [y]; stdout:\n%s", out.String())
			}
		})
	}
}

// TestExecQuestionShowsWhatRuns: the question on the terminal shows the
// command as it will run. Two lines are two lines (joined, the issue's
// `echo hello` + `rm -f important.txt` read as one echo of four words),
// and a carriage return or an escape sequence prints visibly instead of
// overwriting what was shown. [n] refuses: the file is still there.
func TestExecQuestionShowsWhatRuns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, command string
		// want are what the terminal shows: the run's record of the
		// call, and the question.
		want []string
	}{
		{"two lines", "echo hello\nrm -f important.txt", []string{
			"$ echo hello\r\n> rm -f important.txt\r\n",
			"Run these 2 lines?\r\n  │ echo hello\r\n  │ rm -f important.txt\r\n[y] yes",
		}},
		{"controls", "echo safe\r\x1b[2Krm -f important.txt", []string{
			"$ echo safe␍␛[2Krm -f important.txt\r\n",
			"Run echo safe␍␛[2Krm -f important.txt?\r\n[y] yes",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			important := filepath.Join(dir, "important.txt")
			if err := os.WriteFile(important, []byte("keep me\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			script := writeScript(t, bashCall("", c.command), `{"text":"Done."}`)
			term := newTerminal(t)
			_, done := startOnTerminal(t, term, []string{"DSH_STATE_DIR=" + t.TempDir(), "NO_COLOR=1"}, nil,
				"exec", "--script", script, "--cwd", dir, "tidy up")
			// The record of the call and the question come on two
			// streams, in either order.
			for _, w := range c.want {
				term.waitFor(ctx, w)
			}
			shown := term.waitFor(ctx, "[n] no ")
			// No byte the agent printed moves the cursor: the only
			// carriage returns are the terminal's own before a line feed.
			if strings.Contains(strings.ReplaceAll(shown, "\r\n", ""), "\r") || strings.Contains(shown, "\x1b") {
				t.Errorf("a control character reached the terminal:\n%q", shown)
			}
			term.typeLine("n")
			if code := waitExit(ctx, t, done); code != 4 {
				t.Errorf("after [n]: exit %d\n%q", code, term.shown())
			}
			if _, err := os.Stat(important); err != nil {
				t.Errorf("the refused command ran: %v", err)
			}
		})
	}
}
