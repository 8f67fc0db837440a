package execclient

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/tools"
)

// terminalAsker asks the person at the terminal before a command runs:
// the command, then one key (Enter for yes), read with the terminal in raw
// mode for the time of the question only.
type terminalAsker struct {
	in    *os.File
	out   io.Writer
	color bool
	// interrupt is closed when Ctrl-C's cancel was sent: the question is
	// abandoned even if the agent never withdraws it.
	interrupt <-chan struct{}

	// asking makes one question wait for the one before.
	asking sync.Mutex
	// once starts the one reader of in; keys carries what it reads (one
	// read, several bytes when typed fast) and is closed at end of input.
	once sync.Once
	keys chan []byte

	// mu guards restore: how to put the terminal back, while it is raw.
	mu      sync.Mutex
	restore func()
}

// choice is one answer the person can type.
type choice struct {
	letter string
	label  string
	id     acpsdk.PermissionOptionId
}

// choices maps the agent's options to letters: allow once (y), the first
// "always" (this session, a), the second (this project, p), reject (n).
func choices(options []acpsdk.PermissionOption) []choice {
	var cs []choice
	always := 0
	for _, o := range options {
		switch o.Kind {
		case acpsdk.PermissionOptionKindAllowOnce:
			cs = append(cs, choice{"y", "yes", o.OptionId})
		case acpsdk.PermissionOptionKindAllowAlways:
			always++
			if always == 1 {
				cs = append(cs, choice{"a", "always in this session", o.OptionId})
			} else if always == 2 {
				cs = append(cs, choice{"p", "always in this project", o.OptionId})
			}
		case acpsdk.PermissionOptionKindRejectOnce:
			cs = append(cs, choice{"n", "no", o.OptionId})
		}
	}
	return cs
}

// ask prints the question and waits for one key; "" (cancelled) when
// input ends, Ctrl-D is pressed or ctx is done — the command is not run.
// Enter is the first choice (yes). Ctrl-C, which raw mode delivers as a
// key, is sent to the process as the signal it would have been.
func (t *terminalAsker) ask(ctx context.Context, r acpsdk.RequestPermissionRequest) acpsdk.PermissionOptionId {
	t.asking.Lock()
	defer t.asking.Unlock()
	t.once.Do(t.startReader)
	cs := choices(r.Options)
	if len(cs) == 0 {
		return ""
	}
	t.printNotes(r)
	question := t.question(r, cs)
	// Keys pressed before the question was shown do not answer it.
	t.drain()
	return t.answer(ctx, question, cs)
}

// printNotes prints, dimmed and indented, what the request says besides
// the command, so that a person knows what "always" would remember.
func (t *terminalAsker) printNotes(r acpsdk.RequestPermissionRequest) {
	for _, o := range r.Options {
		if o.Kind == acpsdk.PermissionOptionKindAllowAlways {
			// What "always" remembers (the option's own words).
			fmt.Fprintln(t.out, t.dim("  "+tools.Visible(o.Name)))
		}
	}
	// The rest of what the request says — the model's description, what
	// "always" remembers in full — dimmed, indented below the options.
	for _, c := range r.ToolCall.Content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		if text := c.Content.Content.Text.Text; !strings.HasPrefix(text, "```") {
			fmt.Fprintln(t.out, t.dim("  "+strings.ReplaceAll(tools.Visible(text), "\n", "\n  ")))
		}
	}
}

// question is the text of the question, its last line the menu of cs.
func (t *terminalAsker) question(r acpsdk.RequestPermissionRequest, cs []choice) string {
	title := ""
	if r.ToolCall.Title != nil {
		title = *r.ToolCall.Title
	}
	var menu []string
	for i, c := range cs {
		label := "[" + c.letter + "] " + c.label
		if i == 0 {
			label += " (Enter)"
		}
		menu = append(menu, label)
	}
	// The command as it will run: a title that shows only its first line
	// is replaced by every line, each behind a bar so that none can pass
	// for a line of the question. Every character prints visibly, so a
	// carriage return or an escape sequence cannot overwrite what is shown.
	question := fmt.Sprintf("Run %s?\n%s ", t.bold(tools.Visible(title)), strings.Join(menu, "  "))
	if lines := commandLines(r.ToolCall.Content); lines != nil {
		for i, l := range lines {
			lines[i] = "  │ " + t.bold(l)
		}
		what := "this command"
		if len(lines) > 1 {
			what = fmt.Sprintf("these %d lines", len(lines))
		}
		question = fmt.Sprintf("Run %s?\n%s\n%s ", what, strings.Join(lines, "\n"), strings.Join(menu, "  "))
	}
	return question
}

// answer shows the question and reads keys until one is an answer,
// asking again after any other key.
func (t *terminalAsker) answer(ctx context.Context, question string, cs []choice) acpsdk.PermissionOptionId {
	// The menu, the question's last line, is printed once the terminal is
	// raw: a key pressed as soon as it shows answers it.
	lead, menuLine := "", question
	if i := strings.LastIndex(question, "\n"); i >= 0 {
		lead, menuLine = question[:i+1], question[i+1:]
	}
	// Keys typed before the question are dropped (they answer nothing
	// asked); a key typed once "Please press…" shows answers the question
	// asked again, so only the first raw flushes.
	for flush := true; ; flush = false {
		fmt.Fprint(t.out, lead)
		t.raw(flush)
		fmt.Fprint(t.out, menuLine)
		keys, ok := t.nextKeys(ctx)
		t.cooked()
		if !ok || len(keys) == 0 {
			fmt.Fprintln(t.out)
			return ""
		}
		if id, done := t.choose(ctx, keys, cs); done {
			return id
		}
		fmt.Fprintln(t.out)
		fmt.Fprintln(t.out, "Please press one of the letters in brackets (Enter: "+cs[0].label+").")
	}
}

// nextKeys waits for what the person types; false when input ended, ctx
// is done or Ctrl-C's cancel was sent, as then nobody waits for an answer.
func (t *terminalAsker) nextKeys(ctx context.Context) ([]byte, bool) {
	select {
	case <-ctx.Done():
		return nil, false
	case <-t.interrupt:
		return nil, false
	case keys, ok := <-t.keys:
		return keys, ok
	}
}

// choose reads the answer in the first key typed; done is false when the
// key answers nothing and the question is to be asked again.
func (t *terminalAsker) choose(ctx context.Context, keys []byte, cs []choice) (id acpsdk.PermissionOptionId, done bool) {
	key := strings.ToLower(string(keys[:1]))
	switch keys[0] {
	case 3: // Ctrl-C
		fmt.Fprintln(t.out, "^C")
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		// The interrupt (or ctx) ends the question.
		select {
		case <-ctx.Done():
		case <-t.interrupt:
		}
		return "", true
	case 4: // Ctrl-D: no answer, as at end of input
		fmt.Fprintln(t.out)
		return "", true
	case '\r', '\n':
		if len(cs) > 0 {
			key = cs[0].letter
		}
	}
	for _, c := range cs {
		if key == c.letter {
			fmt.Fprintln(t.out, c.letter)
			return c.id, true
		}
	}
	return "", false
}

// drain drops what the reader read before the question.
func (t *terminalAsker) drain() {
	for {
		select {
		case _, ok := <-t.keys:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// raw puts the terminal in raw mode, so that one key answers; a terminal
// that cannot be is read line by line as before. flush drops what was
// typed and not read yet.
func (t *terminalAsker) raw(flush bool) {
	if flush {
		flushInput(t.in)
	}
	state, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		return
	}
	keepOutput(t.in)
	t.mu.Lock()
	t.restore = func() { _ = term.Restore(int(t.in.Fd()), state) }
	t.mu.Unlock()
}

// cooked restores the terminal's mode, if raw() changed it. Called after
// every question, and when the run ends however it ends.
func (t *terminalAsker) cooked() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.restore != nil {
		t.restore()
		t.restore = nil
	}
}

// startReader reads the terminal for the rest of the run. It is not
// stopped: a read on a terminal cannot be interrupted, and the process
// ends soon after the run.
func (t *terminalAsker) startReader() {
	t.keys = make(chan []byte)
	go func() {
		defer close(t.keys)
		buf := make([]byte, 64)
		for {
			n, err := t.in.Read(buf)
			if n > 0 {
				t.keys <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
}

func (t *terminalAsker) bold(s string) string {
	if !t.color {
		return s
	}
	return ansiBold + s + ansiReset
}

func (t *terminalAsker) dim(s string) string {
	if !t.color {
		return s
	}
	return ansiDim + s + ansiReset
}
