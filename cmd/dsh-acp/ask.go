package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// terminalAsker asks the person at the terminal before a command runs:
// the command, then one letter and Enter.
type terminalAsker struct {
	in    *os.File
	out   io.Writer
	color bool
	// interrupt is closed when Ctrl-C's cancel was sent: the question is
	// abandoned even if the agent never withdraws it.
	interrupt <-chan struct{}

	// once starts the one reader of in; lines carries what it reads and
	// is closed at end of input.
	once  sync.Once
	lines chan string
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

// ask prints the question and waits for an answer; "" (cancelled) when
// input ends or ctx is done — the command is not run.
func (t *terminalAsker) ask(ctx context.Context, r acpsdk.RequestPermissionRequest) acpsdk.PermissionOptionId {
	t.once.Do(t.startReader)
	cs := choices(r.Options)
	title := ""
	if r.ToolCall.Title != nil {
		title = *r.ToolCall.Title
	}
	var menu []string
	for _, c := range cs {
		menu = append(menu, "["+c.letter+"] "+c.label)
	}
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
	for {
		fmt.Fprint(t.out, question)
		select {
		case <-ctx.Done():
			fmt.Fprintln(t.out)
			return ""
		case <-t.interrupt:
			fmt.Fprintln(t.out)
			return ""
		case line, ok := <-t.lines:
			if !ok {
				fmt.Fprintln(t.out)
				return ""
			}
			answer := strings.ToLower(strings.TrimSpace(line))
			for _, c := range cs {
				if answer == c.letter || answer == c.label {
					return c.id
				}
			}
			fmt.Fprintln(t.out, "Please type one of the letters in brackets, then Enter.")
		}
	}
}

// startReader reads the terminal line by line for the rest of the run. It
// is not stopped: a read on a terminal cannot be interrupted, and the
// process ends soon after the run.
func (t *terminalAsker) startReader() {
	t.lines = make(chan string)
	go func() {
		defer close(t.lines)
		sc := bufio.NewScanner(t.in)
		for sc.Scan() {
			t.lines <- sc.Text()
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
