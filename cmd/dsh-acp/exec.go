package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/logbridge"
)

// runExec runs one prompt through the same agent the editor gets, via an
// in-process ACP client over pipes, and prints the stream for a person.
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseExec(args, env(getenv))
	if code, done := settle(cfg, err, "dsh-acp exec", stdout, stderr); done {
		return code
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp exec:", err)
		return 2
	}
	defer closeLog()
	a, err := newApp(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp exec:", err)
		return 1
	}
	defer a.close()

	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.agent.Serve(context.WithoutCancel(ctx), toAgentR, toClientW)
		toClientW.Close()
	}()
	defer func() {
		toAgentW.Close()
		<-served
	}()

	p := &printer{w: stdout, yes: cfg.yes, thoughts: cfg.thoughts, color: isTerminal(stdout)}
	if isTerminal(stderr) {
		p.quiet = newSilence(modelSilence, func() { p.notice(stderr, "waiting for the model…") })
	}
	conn := acpsdk.NewClientSideConnection(p, toAgentW, toClientR)
	conn.SetLogger(logbridge.New(log.Named("exec-client")))

	p.quiet.begin()
	stop, err := execPrompt(ctx, conn, cfg)
	p.quiet.end()
	p.finish()
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp exec:", err)
		return 1
	}
	return exitCode(stop, p, stderr)
}

// exitCode maps how the turn ended to the exit codes execUsage lists, so a
// script can tell a finished turn from one that stopped early or whose
// every command was refused.
func exitCode(stop acpsdk.StopReason, p *printer, stderr io.Writer) int {
	switch stop {
	case acpsdk.StopReasonEndTurn:
	case acpsdk.StopReasonCancelled:
		fmt.Fprintf(stderr, "dsh-acp exec: stopped: %s\n", stop)
		return 130
	default:
		fmt.Fprintf(stderr, "dsh-acp exec: stopped: %s\n", stop)
		return 3
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.commands > 0 && p.commands == p.denied {
		fmt.Fprintln(stderr, "dsh-acp exec: every command the model asked to run was refused")
		return 4
	}
	return 0
}

func execPrompt(ctx context.Context, conn *acpsdk.ClientSideConnection, cfg *config) (acpsdk.StopReason, error) {
	bg := context.WithoutCancel(ctx)
	if _, err := conn.Initialize(bg, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		// The display-only terminal gives us output as increments, which
		// prints naturally to a terminal.
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{"terminal_output": true}},
	}); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	sess, err := startSession(bg, conn, cfg)
	if err != nil {
		return "", err
	}
	// Ctrl-C cancels the turn the way an editor does; the prompt then
	// answers "cancelled" and every process it started is stopped.
	stopWatch := context.AfterFunc(ctx, func() {
		_ = conn.Cancel(bg, acpsdk.CancelNotification{SessionId: sess.SessionId})
	})
	defer stopWatch()
	resp, err := conn.Prompt(bg, acpsdk.PromptRequest{
		SessionId: sess.SessionId,
		Prompt:    []acpsdk.ContentBlock{acpsdk.TextBlock(cfg.prompt)},
	})
	if err != nil {
		var re *acpsdk.RequestError
		if errors.As(err, &re) {
			return "", errors.New(re.Message)
		}
		return "", err
	}
	return resp.StopReason, nil
}

// startSession starts a new session, or resumes the stored one --resume
// names (in --cwd when given, else where it was).
func startSession(ctx context.Context, conn *acpsdk.ClientSideConnection, cfg *config) (acpsdk.NewSessionResponse, error) {
	if cfg.resume == "" {
		sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cfg.cwd, McpServers: []acpsdk.McpServer{}})
		if err != nil {
			return sess, fmt.Errorf("new session: %w", err)
		}
		return sess, nil
	}
	cwd := cfg.cwd
	if !cfg.cwdSet {
		if stored, ok := findStored(ctx, conn, cfg.resume); ok {
			cwd = stored
		}
	}
	if _, err := conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(cfg.resume), Cwd: cwd}); err != nil {
		var re *acpsdk.RequestError
		if errors.As(err, &re) {
			return acpsdk.NewSessionResponse{}, fmt.Errorf("resume session %s: %s", cfg.resume, re.Message)
		}
		return acpsdk.NewSessionResponse{}, fmt.Errorf("resume session %s: %w", cfg.resume, err)
	}
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(cfg.resume)}, nil
}

// findStored returns the stored cwd of session id, from session/list.
func findStored(ctx context.Context, conn *acpsdk.ClientSideConnection, id string) (string, bool) {
	var cursor *string
	for {
		page, err := conn.ListSessions(ctx, acpsdk.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			return "", false
		}
		for _, s := range page.Sessions {
			if string(s.SessionId) == id {
				return s.Cwd, true
			}
		}
		if page.NextCursor == nil {
			return "", false
		}
		cursor = page.NextCursor
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printer is the headless runner's ACP client: it prints the stream and
// answers permission questions from --yes.
type printer struct {
	w        io.Writer
	yes      bool
	thoughts bool
	color    bool
	// quiet says when the model is silent; nil when stderr is not a terminal.
	quiet *silence

	// mu guards everything below and orders writes.
	mu sync.Mutex
	// atLineStart: the last byte written was a newline (or nothing yet).
	atLineStart bool
	wrote       bool
	// inThought: the last thing printed was a thought chunk.
	inThought bool
	// refused counts permission questions answered "reject". They are not
	// printed when asked: a request is handled on its own goroutine and
	// would overtake the notifications before it; the refused call's result
	// says "permission denied" in order.
	refused int
	// commands counts the commands the model asked to run, denied those
	// that were not run because a rule or the user refused them.
	commands, denied int
	// execute holds the ids of command calls still awaiting their result.
	execute map[acpsdk.ToolCallId]bool
}

var _ acpsdk.Client = (*printer)(nil)

const (
	ansiDim   = "\x1b[2m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

func (p *printer) style(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + ansiReset
}

func (p *printer) write(s string) {
	if s == "" {
		return
	}
	io.WriteString(p.w, s)
	p.wrote = true
	p.atLineStart = strings.HasSuffix(s, "\n")
}

func (p *printer) newline() {
	if p.wrote && !p.atLineStart {
		p.write("\n")
	}
}

func (p *printer) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.newline()
	if p.refused > 0 {
		p.write(p.style(ansiDim, fmt.Sprintf("(%d command(s) refused: pass --yes to let the agent run commands)", p.refused)) + "\n")
	}
}

// notice writes a line for the person to w (stderr), on a line of its own
// when stdout is the same terminal.
func (p *printer) notice(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.color {
		p.newline()
	}
	// Only called when w is a terminal, so it is always dimmed.
	io.WriteString(w, ansiDim+s+ansiReset+"\n")
}

func (p *printer) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	// Before mu: the silence clock prints through the printer.
	p.quiet.update(n.Update)
	p.mu.Lock()
	defer p.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		if p.inThought {
			p.newline()
			p.inThought = false
		}
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			p.write(t.Text)
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil && p.thoughts {
			if !p.inThought {
				p.newline()
				p.inThought = true
			}
			p.write(p.style(ansiDim, t.Text))
		}
	case u.ToolCall != nil:
		p.inThought = false
		p.newline()
		line := "$ " + u.ToolCall.Title
		if u.ToolCall.Kind != acpsdk.ToolKindExecute {
			line = "• " + u.ToolCall.Title
		} else {
			p.commands++
			if p.execute == nil {
				p.execute = map[acpsdk.ToolCallId]bool{}
			}
			p.execute[u.ToolCall.ToolCallId] = true
		}
		p.write(p.style(ansiBold, line) + "\n")
		if u.ToolCall.Kind == acpsdk.ToolKindRead && u.ToolCall.Status == acpsdk.ToolCallStatusCompleted {
			// Done when shown (the instruction files read): what it read.
			p.readList(u.ToolCall.Content)
		}
	case u.ToolCallUpdate != nil:
		p.toolUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		p.plan(u.Plan.Entries)
	}
	return nil
}

// readList prints the lines of a finished read call's text, indented.
func (p *printer) readList(content []acpsdk.ToolCallContent) {
	for _, c := range content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		for _, l := range strings.Split(c.Content.Content.Text.Text, "\n") {
			p.write(p.style(ansiDim, "  "+l) + "\n")
		}
	}
}

// plan prints the whole plan, one step a line, as /plan shows it.
func (p *printer) plan(entries []acpsdk.PlanEntry) {
	p.inThought = false
	p.newline()
	var b strings.Builder
	b.WriteString("• Plan\n")
	for _, e := range entries {
		mark := "[ ]"
		switch e.Status {
		case acpsdk.PlanEntryStatusCompleted:
			mark = "[x]"
		case acpsdk.PlanEntryStatusInProgress:
			mark = "[>]"
		}
		b.WriteString("  " + mark + " " + e.Content + "\n")
	}
	p.write(b.String())
}

func (p *printer) toolUpdate(tu *acpsdk.SessionToolCallUpdate) {
	if out, ok := tu.Meta["terminal_output"].(map[string]any); ok {
		if data, ok := out["data"].(string); ok {
			p.write(data)
		}
		return
	}
	if tu.Status == nil || (*tu.Status != acpsdk.ToolCallStatusCompleted && *tu.Status != acpsdk.ToolCallStatusFailed) {
		return
	}
	if p.execute[tu.ToolCallId] {
		delete(p.execute, tu.ToolCallId)
		if refusedResult(tu.Content) {
			p.denied++
		}
	}
	if exit, ok := tu.Meta["terminal_exit"].(map[string]any); ok {
		// The output was printed live. What follows it is what the editor
		// shows after the terminal — the notes a terminal cannot show (a
		// timeout, where the full output went) or the error that ended the
		// call (an abort) — and how the command exited.
		p.newline()
		p.printFenced(tu.Content)
		if s := exitLine(exit); s != "" {
			p.write(p.style(ansiDim, s) + "\n")
		}
		return
	}
	// A tool without a terminal: print the result text from its fenced block.
	p.printFenced(tu.Content)
}

func (p *printer) printFenced(content []acpsdk.ToolCallContent) {
	for _, c := range content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		if body, ok := unfence(c.Content.Content.Text.Text); ok {
			p.newline()
			p.write(body)
		}
	}
}

// refusedResult reports a command that was not run because a --deny rule
// or the user refused it: its result is the permission-denied error.
func refusedResult(content []acpsdk.ToolCallContent) bool {
	for _, c := range content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		if body, ok := unfence(c.Content.Content.Text.Text); ok && strings.HasPrefix(body, "Error: permission denied") {
			return true
		}
	}
	return false
}

// exitLine says how a command that ran in the terminal ended, from the
// editor's terminal_exit, in the words of the model's markers; nothing for
// exit code 0 or an exit nobody knows.
func exitLine(exit map[string]any) string {
	if sig, ok := exit["signal"].(string); ok && sig != "" {
		return "[killed by signal: " + sig + "]"
	}
	if code, ok := exit["exit_code"].(float64); ok && code != 0 {
		return fmt.Sprintf("[exit code: %d]", int(code))
	}
	return ""
}

// unfence returns the body of a ```console block.
func unfence(s string) (string, bool) {
	i := strings.Index(s, "console\n")
	if i < 3 || strings.Trim(s[:i], "`") != "" {
		return "", false
	}
	fence := s[:i]
	body := strings.TrimSuffix(s[i+len("console\n"):], fence)
	return body, true
}

func (p *printer) RequestPermission(_ context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := acpsdk.PermissionOptionKindRejectOnce
	if p.yes {
		want = acpsdk.PermissionOptionKindAllowOnce
	} else {
		p.refused++
	}
	for _, o := range r.Options {
		if o.Kind == want {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
				Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId, Outcome: "selected"},
			}}, nil
		}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
	}}, nil
}

var errNoFS = acpsdk.NewMethodNotFound("the headless runner offers no client file system or terminals")

func (p *printer) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNoFS
}

func (p *printer) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNoFS
}

func (p *printer) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNoFS
}

func (p *printer) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNoFS
}

func (p *printer) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNoFS
}

func (p *printer) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNoFS
}

func (p *printer) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNoFS
}
