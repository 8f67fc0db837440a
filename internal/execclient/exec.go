package execclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/internal/logbridge"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Usage is dsh-acp exec's help, above its flags.
const Usage = `Usage:
  dsh-acp exec [flags] PROMPT...
  dsh-acp exec [flags] -            (or a prompt piped to stdin)

Runs one prompt through the agent and prints the stream. Flags may come
before or after the prompt; everything after "--" is prompt text.
--continue goes on with the newest stored session of this directory,
--resume ID with any (dsh-acp sessions lists them).

A command that needs approval is asked on the terminal, one key: [y] yes
(or Enter), [a] always in this session, [p] always in this project, [n]
no. Without a terminal it is refused unless --yes (every command,
unconfined), --allow PATTERN (matching commands) or --default-mode
sandbox (every command, confined) says otherwise; an MCP tool with
--allow mcp:SERVER/TOOL or --allow-mcp-readonly.

Exit codes: 0 the turn ended normally, 1 it failed (a model or agent
error), 2 usage error, 3 it stopped early (max_turn_requests, the model's
length limit or a refusal), 4 every command the model asked to run was
refused, 130 interrupted.

Flags:
`

// Agent is the agent a run speaks ACP to, in this process, as an editor
// would over stdio.
type Agent interface {
	Serve(ctx context.Context, in io.Reader, out io.Writer) error
}

// Options are one run's: what to ask, where, and how to print it.
type Options struct {
	// Prompt is the prompt's text (see ReadPrompt).
	Prompt string
	// Cwd is the session's absolute directory; CwdSet: --cwd gave it (a
	// resumed session otherwise keeps its own).
	Cwd    string
	CwdSet bool
	// Resume is the stored session's whole id to continue; "" a new one.
	Resume string
	// Servers are the session's MCP servers (LoadMCPConfig).
	Servers []acpsdk.McpServer
	// Yes answers every question allow; Thoughts prints the reasoning;
	// Diffs prints what each command changed; JSON prints events.
	Yes, Thoughts, Diffs, JSON bool
	// NoPersist: nothing is stored (the last line says nothing is kept).
	NoPersist bool
	// KillGrace is the commands' grace, said on the first Ctrl-C.
	KillGrace time.Duration
	// Signals: the run is the process's own, not a test's: a second
	// Ctrl-C exits at once.
	Signals bool
	// NoColor is NO_COLOR: no colour even on a terminal.
	NoColor bool
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Logger  *zap.Logger
	// WaitMCP waits until session id's MCP servers have listed their tools.
	WaitMCP func(ctx context.Context, id string) error
	// Answered reports whether the model answered anything in session id:
	// what the session holds, not what was printed.
	Answered func(id string) bool
	// FirstProblem says, after a failed run, what is wrong first (a host
	// that does not resolve); "" for nothing more.
	FirstProblem func(ctx context.Context) string
}

// Fail ends a run that failed before the agent answered: why, on stderr
// and, with JSON, in the end event. It returns code.
func Fail(o Options, code int, err error) int {
	var ev *events
	if o.JSON {
		ev = &events{w: o.Stdout}
	}
	return fail(o.Stderr, ev, code, err)
}

// fail says why the run ended early: on stderr, and with ev in the end
// event.
func fail(stderr io.Writer, ev *events, code int, err error) int {
	fmt.Fprintln(stderr, "dsh-acp exec:", err)
	if ev != nil {
		ev.emit("end", map[string]any{"stop_reason": nil, "exit_code": code, "error": err.Error()})
	}
	return code
}

// Run runs one prompt through agent, via an ACP client over pipes, prints
// the stream for a person (or as JSON events) and returns the exit code
// Usage lists.
func Run(ctx context.Context, agent Agent, o Options) int {
	var ev *events
	if o.JSON {
		ev = &events{w: o.Stdout}
	}
	toAgentW, toClientR, unserve := serveInProcess(ctx, agent)
	defer unserve()

	p := newPrinter(o)
	p.events = ev
	// Closed once Ctrl-C's cancel has gone to the agent: a question on the
	// terminal is abandoned after it, so the agent sees the turn
	// cancelled before the question withdrawn.
	cancelSent := make(chan struct{})
	if p.asker != nil {
		p.asker.interrupt = cancelSent
	}
	// The terminal leaves raw mode however the run ends.
	defer p.asker.cooked()
	if o.Signals {
		stop := interrupted{
			stderr: o.Stderr,
			grace:  o.KillGrace,
			before: func() { p.unwait(); p.asker.cooked() },
			left:   p.left,
			exit:   os.Exit,
		}.watch()
		defer stop()
	}
	conn := acpsdk.NewClientSideConnection(p, toAgentW, toClientR)
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	conn.SetLogger(logbridge.New(log.Named("exec-client")))

	p.quiet.begin()
	started := func(id acpsdk.SessionId, resumed bool, cwd string) {
		p.setSession(id, cwd, o.NoPersist)
		if ev != nil {
			ev.emit("session", map[string]any{"session_id": id, "cwd": cwd, "resumed": resumed})
		}
	}
	resp, err := execPrompt(ctx, conn, o, started, cancelSent)
	p.quiet.end()
	p.finish()
	if err != nil {
		if o.FirstProblem != nil {
			if first := o.FirstProblem(ctx); first != "" {
				fmt.Fprintln(o.Stderr, "dsh-acp exec:", first)
			}
		}
		return fail(o.Stderr, ev, 1, err)
	}
	return execEnd(resp, p, o.Stderr, ev)
}

// serveInProcess runs the agent on pipes, as the editor would over stdio.
// Its lifetime is the run's, not ctx's: unserve closes its input and
// waits for it, so no goroutine outlives the run.
func serveInProcess(ctx context.Context, a Agent) (toAgent *io.PipeWriter, fromAgent *io.PipeReader, unserve func()) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.Serve(context.WithoutCancel(ctx), toAgentR, toClientW)
		toClientW.Close()
	}()
	return toAgentW, toClientR, func() {
		toAgentW.Close()
		<-served
	}
}

// execEnd turns a finished turn into the exit code, after the spend line
// on stderr and, with --json, the usage and end events.
func execEnd(resp acpsdk.PromptResponse, p *printer, stderr io.Writer, ev *events) int {
	code := exitCode(resp.StopReason, p, stderr)
	if line := spentLine(resp); line != "" {
		fmt.Fprintln(stderr, "dsh-acp exec:", line)
	}
	if ev != nil {
		if u := usageEvent(resp); u != nil {
			ev.emit("usage", u)
		}
		ev.emit("end", map[string]any{"stop_reason": resp.StopReason, "exit_code": code})
	}
	return code
}

// usageEvent is exec --json's account of the turn's tokens and cost; nil
// when the endpoint counted nothing.
func usageEvent(resp acpsdk.PromptResponse) map[string]any {
	u := resp.Usage
	if u == nil {
		return nil
	}
	f := map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}
	if u.CachedReadTokens != nil {
		f["cached_read_tokens"] = *u.CachedReadTokens
	}
	if u.ThoughtTokens != nil {
		f["thought_tokens"] = *u.ThoughtTokens
	}
	if c, ok := resp.Meta["cost"].(map[string]any); ok {
		f["cost"] = c
	}
	return f
}

// spentLine is the turn's tokens and, when known, its cost, for the last
// line on stderr; empty when the endpoint counted nothing.
func spentLine(resp acpsdk.PromptResponse) string {
	u := resp.Usage
	if u == nil {
		return ""
	}
	line := fmt.Sprintf("tokens: %d in", u.InputTokens)
	if u.CachedReadTokens != nil && *u.CachedReadTokens > 0 {
		line += fmt.Sprintf(" (%d cached)", *u.CachedReadTokens)
	}
	line += fmt.Sprintf(", %d out", u.OutputTokens)
	if c, ok := resp.Meta["cost"].(map[string]any); ok {
		if amount, ok := c["amount"].(float64); ok {
			line += fmt.Sprintf("; cost: %.4f %v", amount, c["currency"])
		}
	}
	return line
}

// Client is the ACP client a run of o uses (Run makes its own): for a
// caller that drives a connection itself, as the benchmarks do.
func Client(o Options) acpsdk.Client { return newPrinter(o) }

// newPrinter is the client of one exec run: colour only on a terminal and
// without NO_COLOR; questions asked on the terminal (see answerFrom) when
// Yes was not given, else refused with a word on how to allow.
func newPrinter(o Options) *printer {
	color := !o.NoColor && isTerminal(o.Stdout) && !o.JSON
	p := &printer{w: o.Stdout, yes: o.Yes, thoughts: o.Thoughts, color: color, hint: o.Stderr, cwd: o.Cwd}
	if o.Diffs {
		p.changes = &changeView{cwd: o.Cwd, color: color}
	}
	if !o.Yes {
		if in, out := answerFrom(o.Stdin, o.Stderr); in != nil {
			p.asker = &terminalAsker{in: in, out: out, color: !o.NoColor && isTerminal(out)}
		}
	}
	p.tty = isTerminal(o.Stdout)
	if isTerminal(o.Stderr) {
		dim := !o.NoColor
		p.quiet = newSilence(ModelSilence, func(d time.Duration) { p.waiting(o.Stderr, d, dim) }, p.unwait)
	}
	return p
}

// maxPromptBytes bounds a prompt read from stdin.
const maxPromptBytes = 8 << 20

// ReadPrompt is the prompt: from stdin for "exec -", and when no prompt
// was given and stdin is not a terminal (a pipe or a file); else prompt.
func ReadPrompt(prompt string, stdin io.Reader) (string, error) {
	fromStdin := prompt == "-" || (strings.TrimSpace(prompt) == "" && stdin != nil && !isTerminal(stdin))
	if fromStdin {
		if stdin == nil {
			return "", errors.New("exec -: there is no stdin to read the prompt from")
		}
		b, err := io.ReadAll(io.LimitReader(stdin, maxPromptBytes+1))
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		if len(b) > maxPromptBytes {
			return "", fmt.Errorf("the prompt on stdin is over %d MiB", maxPromptBytes>>20)
		}
		prompt = strings.TrimRight(string(b), "\r\n")
	}
	if strings.TrimSpace(prompt) == "" {
		return "", errors.New("exec needs a prompt: dsh-acp exec [flags] PROMPT, or on stdin: echo PROMPT | dsh-acp exec -")
	}
	return prompt, nil
}

// sentence is what a person reads of an error from the agent: the message
// of a JSON-RPC error (with its detail), never the JSON object.
func sentence(err error) string {
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	switch d := re.Data.(type) {
	case string:
		if d != "" {
			return d
		}
	case map[string]any:
		if e, ok := d["error"].(string); ok && e != "" {
			return e
		}
		if e, ok := d["details"].(string); ok && e != "" {
			return e
		}
	}
	return re.Message
}

// exitCode maps how the turn ended to the exit codes Usage lists, so a
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

// execPrompt runs the prompt in a new or resumed session. A new session
// that holds nothing of the model's (es.answered) is deleted — the prompt
// failed or was cancelled before the model answered, or it was a slash
// command the agent answered alone: there is nothing in it to resume, and
// a failing key or endpoint would otherwise leave one stored session per
// try.
func execPrompt(ctx context.Context, conn *acpsdk.ClientSideConnection, o Options, started func(id acpsdk.SessionId, resumed bool, cwd string), cancelSent chan<- struct{}) (acpsdk.PromptResponse, error) {
	bg := context.WithoutCancel(ctx)
	if _, err := conn.Initialize(bg, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		// The display-only terminal gives us output as increments, which
		// prints naturally to a terminal.
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{"terminal_output": true}},
	}); err != nil {
		return acpsdk.PromptResponse{}, fmt.Errorf("initialize: %s", sentence(err))
	}
	sess, cwd, err := startSession(bg, conn, o)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	started(sess.SessionId, o.Resume != "", cwd)
	if len(o.Servers) > 0 && o.WaitMCP != nil {
		// Bounded by --mcp-start-timeout; a server that fails is told in
		// the turn's output. Ctrl-C stops the wait, and the prompt is
		// then cancelled as it starts.
		_ = o.WaitMCP(ctx, string(sess.SessionId))
	}
	// Ctrl-C cancels the turn the way an editor does; the prompt then
	// answers "cancelled" and every process it started is stopped.
	stopWatch := context.AfterFunc(ctx, func() {
		_ = conn.Cancel(bg, acpsdk.CancelNotification{SessionId: sess.SessionId})
		close(cancelSent)
	})
	defer stopWatch()
	resp, err := conn.Prompt(bg, acpsdk.PromptRequest{
		SessionId: sess.SessionId,
		Prompt:    []acpsdk.ContentBlock{acpsdk.TextBlock(o.Prompt)},
	})
	if o.Resume == "" && (o.Answered == nil || !o.Answered(string(sess.SessionId))) {
		_, _ = conn.UnstableDeleteSession(bg, acpsdk.UnstableDeleteSessionRequest{SessionId: sess.SessionId})
	}
	if err != nil {
		return acpsdk.PromptResponse{}, errors.New(sentence(err))
	}
	return resp, nil
}

// startSession starts a new session, or resumes the stored one --resume
// names (in --cwd when given, else where it was), with the other project
// roots stored with it (a resume's request gives the whole list: none
// would drop them).
func startSession(ctx context.Context, conn *acpsdk.ClientSideConnection, o Options) (acpsdk.NewSessionResponse, string, error) {
	servers := o.Servers
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	if o.Resume == "" {
		sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: o.Cwd, McpServers: servers})
		if err != nil {
			return sess, "", fmt.Errorf("new session in %s: %s", o.Cwd, sentence(err))
		}
		return sess, o.Cwd, nil
	}
	cwd := o.Cwd
	var roots []string
	if stored, ok := findStored(ctx, conn, o.Resume); ok {
		if !o.CwdSet {
			cwd = stored.Cwd
		}
		roots = stored.AdditionalDirectories
	}
	if _, err := conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(o.Resume), Cwd: cwd, AdditionalDirectories: roots, McpServers: servers}); err != nil {
		var re *acpsdk.RequestError
		if errors.As(err, &re) {
			return acpsdk.NewSessionResponse{}, "", fmt.Errorf("resume session %s: %s", o.Resume, re.Message)
		}
		return acpsdk.NewSessionResponse{}, "", fmt.Errorf("resume session %s: %w", o.Resume, err)
	}
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(o.Resume)}, cwd, nil
}

// findStored returns what session/list says of session id: its stored
// cwd and roots.
func findStored(ctx context.Context, conn *acpsdk.ClientSideConnection, id string) (acpsdk.SessionInfo, bool) {
	var cursor *string
	for {
		page, err := conn.ListSessions(ctx, acpsdk.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			return acpsdk.SessionInfo{}, false
		}
		for _, s := range page.Sessions {
			if string(s.SessionId) == id {
				return s, true
			}
		}
		if page.NextCursor == nil {
			return acpsdk.SessionInfo{}, false
		}
		cursor = page.NextCursor
	}
}

// answerFrom is where a person's answers are read (in) and the question
// is asked (out): stdin and stderr when both are terminals; else, as ssh
// and git ask for a password, the process's own terminal for what is not
// one — the prompt came down a pipe (cat task.md | dsh-acp exec), or
// stderr goes to a file (2>log) where the question would go unseen. Nil
// when there is no one to ask. The terminal stays open for the rest of
// the run (see startReader).
func answerFrom(stdin io.Reader, stderr io.Writer) (in *os.File, out io.Writer) {
	f, ok := stdin.(*os.File)
	if !ok {
		return nil, nil
	}
	inTerm, errTerm := isTerminal(f), isTerminal(stderr)
	if inTerm && errTerm {
		return f, stderr
	}
	if !inTerm && !errTerm {
		return nil, nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, nil
	}
	if !isTerminal(tty) {
		tty.Close()
		return nil, nil
	}
	if inTerm {
		return f, tty
	}
	return tty, stderr
}

// isTerminal reports a stream that is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
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
	// tty: stdout is a terminal (perhaps the one stderr is).
	tty bool
	// asker asks the person on the terminal; nil: answer from --yes.
	asker *terminalAsker
	// hint is where the first automatic refusal says how to allow.
	hint io.Writer
	// changes renders what a command changed; nil with --diffs off.
	changes *changeView
	// events, with --json, is where everything goes instead of text.
	events *events
	// cwd is the session's directory, the base of the paths shown.
	cwd string
	// session is the session's id once started; noPersist: not stored.
	session   acpsdk.SessionId
	noPersist bool

	// mu guards everything below and orders writes.
	mu sync.Mutex
	// atLineStart: the last byte written was a newline (or nothing yet).
	atLineStart bool
	// waitShown: the waiting line is on waitW (see waiting).
	waitShown bool
	waitW     io.Writer
	wrote     bool
	// inThought: the last thing printed was a thought chunk.
	inThought bool
	// hinted: the kinds of call (commands, each MCP tool) whose refusal
	// has said how to allow them. A refusal itself is not printed when
	// asked: a request is handled on its own goroutine and would overtake
	// the notifications before it; the refused call's result says
	// "permission denied" in order.
	hinted map[string]bool
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
	p.clearWait()
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
	if p.events != nil {
		return
	}
	p.newline()
}

// waiting shows, on w (stderr, a terminal), how long the model has been
// silent, on one line rewritten in place (after what stdout printed, when
// stdout is a terminal too); dimmed unless NO_COLOR.
func (p *printer) waiting(w io.Writer, silent time.Duration, dim bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.waitShown && p.tty {
		p.newline()
	}
	s := fmt.Sprintf("waiting for the model… %ds", int(silent.Seconds()))
	if dim {
		s = ansiDim + s + ansiReset
	}
	io.WriteString(w, "\r"+s+"\x1b[K")
	p.waitShown, p.waitW = true, w
}

// unwait erases the waiting line: the model spoke, or the run is over.
func (p *printer) unwait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
}

// clearWait erases the waiting line if it is shown. p.mu is held.
func (p *printer) clearWait() {
	if p.waitShown {
		io.WriteString(p.waitW, "\r\x1b[K")
		p.waitShown = false
	}
}

func (p *printer) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	// Before mu: the silence clock prints through the printer.
	p.quiet.update(n.Update)
	p.mu.Lock()
	defer p.mu.Unlock()
	u := n.Update
	p.tally(u)
	if p.events != nil {
		if typ, fields, ok := updateEvent(u, p.cwd); ok {
			p.events.emit(typ, fields)
		}
		return nil
	}
	switch {
	case u.AgentMessageChunk != nil:
		p.message(u.AgentMessageChunk)
	case u.AgentThoughtChunk != nil:
		p.thought(u.AgentThoughtChunk)
	case u.ToolCall != nil:
		p.toolCall(u.ToolCall)
	case u.ToolCallUpdate != nil:
		p.toolUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		p.plan(u.Plan.Entries)
	}
	return nil
}

// tally counts the commands the model asked to run, and those refused,
// for the exit code. p.mu is held.
func (p *printer) tally(u acpsdk.SessionUpdate) {
	switch {
	case u.ToolCall != nil && u.ToolCall.Kind == acpsdk.ToolKindExecute:
		p.commands++
		if p.execute == nil {
			p.execute = map[acpsdk.ToolCallId]bool{}
		}
		p.execute[u.ToolCall.ToolCallId] = true
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		if tu.Status != nil && finished(*tu.Status) && p.execute[tu.ToolCallId] {
			delete(p.execute, tu.ToolCallId)
			if refusedResult(tu.Content) {
				p.denied++
			}
		}
	}
}

// message prints a chunk of the model's answer, on a line of its own after
// a thought. p.mu is held.
func (p *printer) message(c *acpsdk.SessionUpdateAgentMessageChunk) {
	if p.inThought {
		p.newline()
		p.inThought = false
	}
	if t := c.Content.Text; t != nil {
		p.write(t.Text)
	}
}

// thought prints a chunk of the model's thinking, dimmed, when thoughts
// are shown. p.mu is held.
func (p *printer) thought(c *acpsdk.SessionUpdateAgentThoughtChunk) {
	if t := c.Content.Text; t != nil && p.thoughts {
		if !p.inThought {
			p.newline()
			p.inThought = true
		}
		p.write(p.style(ansiDim, t.Text))
	}
}

// toolCall prints a tool call's title: "$ command" for a command (counted,
// and remembered for its updates) — every line of it, the second and
// later after "> " as a shell shows them, when the title shows only its
// first —, "• title" for another tool. Nothing in it can move the cursor:
// every character prints visibly. p.mu is held.
func (p *printer) toolCall(tc *acpsdk.SessionUpdateToolCall) {
	p.inThought = false
	p.newline()
	line := "$ " + tools.Visible(tc.Title)
	if tc.Kind != acpsdk.ToolKindExecute {
		line = "• " + tools.Visible(tc.Title)
	} else if lines := commandLines(tc.Content); lines != nil {
		line = "$ " + strings.Join(lines, "\n> ")
	}
	p.write(p.style(ansiBold, line) + "\n")
	if tc.Kind == acpsdk.ToolKindRead && tc.Status == acpsdk.ToolCallStatusCompleted {
		// Done when shown (the instruction files read): what it read.
		p.readList(tc.Content)
	}
	if finished(tc.Status) {
		// Done when shown (a background task's end, told after the turn):
		// its notice and what the task changed.
		p.printFenced(tc.Content)
		p.printChanges(tc.Content)
	}
}

// setSession is the session once known: its id, and its directory (a
// resumed session's own), whether it is stored.
func (p *printer) setSession(id acpsdk.SessionId, cwd string, noPersist bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.session, p.noPersist = id, noPersist
	p.cwd = cwd
	if p.changes != nil {
		p.changes.cwd = cwd
	}
}

// left says what a run that quits at once leaves: the commands still
// running (the watchdog ends them, and the background tasks, as it does
// when the agent dies), and what the session keeps.
func (p *printer) left() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	if n := len(p.execute); n > 0 {
		fmt.Fprintf(&b, "%d command(s) still running", n)
	} else {
		b.WriteString("no command running")
	}
	b.WriteString(" — the watchdog ends them and any background task (SIGTERM, SIGKILL after the grace); ")
	switch {
	case p.session == "":
		b.WriteString("no session was started")
	case p.noPersist:
		b.WriteString("the session was not stored (--no-persist)")
	default:
		fmt.Fprintf(&b, "session %s keeps what was stored before this moment (dsh-acp exec --resume %s)", p.session, p.session)
	}
	return b.String()
}

// printChanges prints the diffs (and the one-line summaries) of what a
// call changed, after its output. p.mu is held.
func (p *printer) printChanges(content []acpsdk.ToolCallContent) {
	if p.changes == nil {
		return
	}
	if s := p.changes.render(content); s != "" {
		p.newline()
		p.write(s)
	}
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
	steps := make([]tools.PlanEntry, len(entries))
	for i, e := range entries {
		// The SDK's statuses are ACP's words, which the plan tool's are.
		steps[i] = tools.PlanEntry{Step: e.Content, Status: string(e.Status)}
	}
	p.write(tools.PlanBlock(steps) + "\n")
}

func (p *printer) toolUpdate(tu *acpsdk.SessionToolCallUpdate) {
	if out, ok := tu.Meta["terminal_output"].(map[string]any); ok {
		if data, ok := out["data"].(string); ok {
			p.write(data)
		}
		return
	}
	if tu.Status == nil || !finished(*tu.Status) {
		return
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
		p.printChanges(tu.Content)
		return
	}
	// A tool without a terminal: print the result text from its fenced block.
	p.printFenced(tu.Content)
	p.printChanges(tu.Content)
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
func unfence(s string) (string, bool) { return unfenceLang(s, "console") }

// unfenceLang returns the body of a fenced block of the language lang.
func unfenceLang(s, lang string) (string, bool) {
	i := strings.Index(s, lang+"\n")
	if i < 3 || strings.Trim(s[:i], "`") != "" {
		return "", false
	}
	fence := s[:i]
	body := strings.TrimSuffix(s[i+len(lang)+1:], fence)
	return body, true
}

// commandLines are the lines of the whole command a call or a question
// shows as a ```sh block (the title shows only its first line), every
// character visible; nil when it shows none.
func commandLines(content []acpsdk.ToolCallContent) []string {
	for _, c := range content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		if body, ok := unfenceLang(c.Content.Content.Text.Text, "sh"); ok {
			return strings.Split(tools.Visible(strings.TrimSuffix(body, "\n")), "\n")
		}
	}
	return nil
}

// howToAllow is what a run without a terminal says of a refused call,
// the flags that would let it run: for a command, the sandbox, a pattern
// or --yes; for an MCP tool (which the sandbox never covers), its key or
// the read-only annotation. key is the call's --allow key ("" unknown).
func howToAllow(r acpsdk.RequestPermissionRequest, key string) string {
	if r.ToolCall.Kind != nil && *r.ToolCall.Kind == acpsdk.ToolKindExecute {
		return "no terminal to ask on; to let commands run pass --default-mode sandbox (every command, confined), --allow PATTERN (commands starting with it) or --yes (every command, unconfined)"
	}
	allow := "--allow mcp:SERVER/TOOL"
	if strings.HasPrefix(key, "mcp:") {
		allow = "--allow " + key
	}
	return "no terminal to ask on; to let this tool run pass " + allow + " (this tool), --allow-mcp-readonly (the tools its server marks read-only) or --yes (every call)"
}

// allowKey is the --allow key a question names in its "always" option
// ("Always allow `mcp:github/search` in this session"): the first key in
// backquotes; "" when there is none.
func allowKey(r acpsdk.RequestPermissionRequest) string {
	for _, o := range r.Options {
		if o.Kind != acpsdk.PermissionOptionKindAllowAlways {
			continue
		}
		if _, rest, ok := strings.Cut(o.Name, "`"); ok {
			if key, _, ok := strings.Cut(rest, "`"); ok {
				return key
			}
		}
	}
	return ""
}

func (p *printer) RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	p.question(r)
	if p.asker != nil {
		p.mu.Lock()
		p.clearWait()
		p.newline()
		p.mu.Unlock()
		// The person's time is not the model's silence.
		p.quiet.hold(true)
		defer p.quiet.hold(false)
		// Not under mu while the person thinks: output keeps flowing.
		id := p.asker.ask(ctx, r)
		p.answer(r, id, "user")
		return selected(id), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	want, by := acpsdk.PermissionOptionKindRejectOnce, "no_terminal"
	if p.yes {
		want, by = acpsdk.PermissionOptionKindAllowOnce, "yes"
	} else {
		p.refusedHint(r)
	}
	for _, o := range r.Options {
		if o.Kind == want {
			p.answer(r, o.OptionId, by)
			resp := selected(o.OptionId)
			if !p.yes {
				// Nobody refused it: the agent tells the model so.
				resp.Meta = map[string]any{"unattended": true}
			}
			return resp, nil
		}
	}
	p.answer(r, "", by)
	return selected(""), nil
}

// refusedHint says on stderr how to let a refused call run: once for the
// commands, once for each MCP tool (its own --allow key). The call's
// result, on stdout, says it was refused. p.mu is held.
func (p *printer) refusedHint(r acpsdk.RequestPermissionRequest) {
	key := allowKey(r)
	kind := "command"
	if r.ToolCall.Kind == nil || *r.ToolCall.Kind != acpsdk.ToolKindExecute {
		kind = "tool " + key
	}
	if p.hinted[kind] || p.hint == nil {
		return
	}
	p.clearWait()
	if p.hinted == nil {
		p.hinted = map[string]bool{}
	}
	p.hinted[kind] = true
	title := ""
	if r.ToolCall.Title != nil {
		title = *r.ToolCall.Title
	}
	fmt.Fprintf(p.hint, "dsh-acp exec: refused %q: %s\n", title, howToAllow(r, key))
}

// question is exec --json's event of a permission question.
func (p *printer) question(r acpsdk.RequestPermissionRequest) {
	if p.events == nil {
		return
	}
	opts := make([]map[string]any, len(r.Options))
	for i, o := range r.Options {
		opts[i] = map[string]any{"id": o.OptionId, "name": o.Name, "kind": o.Kind}
	}
	f := map[string]any{"id": r.ToolCall.ToolCallId, "options": opts}
	if r.ToolCall.Title != nil {
		f["title"] = *r.ToolCall.Title
	}
	if r.ToolCall.RawInput != nil {
		f["input"] = r.ToolCall.RawInput
	}
	if lines := commandLines(r.ToolCall.Content); lines != nil {
		f["command"] = strings.Join(lines, "\n")
	}
	p.events.emit("permission", f)
}

// answer is exec --json's event of how a question was answered (id ""
// is no answer: the question was abandoned), and by whom: "user" on the
// terminal, "yes" (--yes), "no_terminal" (refused: no one to ask).
func (p *printer) answer(r acpsdk.RequestPermissionRequest, id acpsdk.PermissionOptionId, by string) {
	if p.events == nil {
		return
	}
	kind := "cancelled"
	for _, o := range r.Options {
		if o.OptionId == id && id != "" {
			kind = string(o.Kind)
		}
	}
	p.events.emit("permission_answer", map[string]any{"id": r.ToolCall.ToolCallId, "option_id": id, "kind": kind, "by": by})
}

// selected answers with an option, or cancelled for "".
func selected(id acpsdk.PermissionOptionId) acpsdk.RequestPermissionResponse {
	if id == "" {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
			Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
		}}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: id, Outcome: "selected"},
	}}
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
