// Package turn runs a session's prompts: it begins a turn on the session,
// builds the model loop's input from the session (history, tools, model,
// instructions read for it, notices, the prompt's text with its linked
// files), decides each call's approval (permission.Decide), keeps what
// happens in the session as it happens, and finishes the turn (history,
// store sync, the notes the user is told). It owns each session's MCP
// servers' lifecycle and the images policy.
//
// It stands between the protocol layer, which only translates (package acp
// implements Show, Asker and FileReader over ACP), and the model loop
// (package agent), which is given everything it reads.
package turn

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Options configure a Runner.
type Options struct {
	// Sessions is the registry every session lives in. Required.
	Sessions *sessions.Registry
	// Loop runs the model loop of a turn. Required.
	Loop *agent.Loop
	// Rules are the --allow/--deny rules checked before anyone is asked.
	Rules permission.Rules
	// Project holds the "always in this project" answers; nil offers no
	// such answer (--no-persist).
	Project ProjectRules
	// MCP configures the MCP servers of each session.
	MCP MCPOptions
	// Noticed, if set, tells what the session's background tasks changed
	// whose end a completion notice reported: the user is shown it at the
	// end of the turn the notice went with, unless a bash_output call of
	// the turn showed it.
	Noticed Noticed
	// Model is the configured model, which a session without a model
	// option of its own asks; empty means "default".
	Model string
	// Thinking is --thinking: the thought level sessions start with, and,
	// for a model that is not DeepSeek's, the user's word that it takes
	// reasoning_effort; empty means DeepSeek's default (high), and no
	// thinking for other models.
	Thinking string
	// Images is --images: "on" sends images to any model, "off" to none,
	// empty to the models known to read them.
	Images string
	// UserInstructions is the path of the user's own AGENTS.md, read before
	// every project's; empty means none.
	UserInstructions string
	Logger           *zap.Logger
}

// Runner runs the turns of every session of the process.
type Runner struct {
	opts Options
	log  *zap.Logger
	// imagesNoted holds the ids of sessions told that their model does
	// not read images.
	imagesNoted sync.Map
}

// New returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Sessions == nil || opts.Loop == nil {
		return nil, errors.New("turn: Sessions and Loop are required")
	}
	if opts.Model == "" {
		opts.Model = "default"
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Runner{opts: opts, log: log}, nil
}

// Turn is one prompt's turn on a session, begun and not yet ended.
type Turn struct {
	r   *Runner
	s   *sessions.Session
	ctx context.Context
	end func()
	log *zap.Logger
}

// Begin begins a turn on session id for the prompt the wire numbered
// ticket: a newer prompt of the session supersedes it, a cancel of that
// ticket cancels it. End must be called once the prompt is answered.
//
// The turn is not bound to ctx, the request's: the SDK cancels that for
// every session/cancel and newer prompt of the session as its handlers
// happen to run, which can hit a prompt written after the cancel.
// Cancels, supersedes and shutdown reach the turn, which the session owns,
// in wire order, through the ticket.
func (r *Runner) Begin(ctx context.Context, id string, ticket uint64) (*Turn, error) {
	s, err := r.opts.Sessions.Get(id)
	if err != nil {
		return nil, err
	}
	tctx, end, err := s.BeginTurn(context.WithoutCancel(ctx), sessions.Ticket(ticket))
	if err != nil {
		return nil, err
	}
	return &Turn{r: r, s: s, ctx: tctx, end: end, log: r.log.With(zap.String("session", s.ID))}, nil
}

// End lets the session's next turn start.
func (t *Turn) End() { t.end() }

// Superseded reports whether a newer prompt or a cancel ended the turn
// before it started: it is answered "cancelled" and not run.
func (t *Turn) Superseded() bool {
	if t.ctx.Err() == nil {
		return false
	}
	t.log.Info("prompt superseded before it started", zap.Error(context.Cause(t.ctx)))
	return true
}

// Input is a prompt as the protocol layer gives it, with the ways to
// reach the user for this turn.
type Input struct {
	// Parts are the prompt's blocks, in order.
	Parts []Part
	// Stored is the prompt as the session's log keeps it (without image
	// data), for a replay; About is what the user typed of it, for the
	// session's title.
	Stored json.RawMessage
	About  string
	// Show shows the turn to the user. Required.
	Show Show
	// Ask asks the user about a call no rule or mode decides. Required.
	Ask Asker
	// Files reads the files the prompt links to the editor's way (unsaved
	// buffers); nil reads them from disk, inside the session's directory.
	Files FileReader
	// Editor is the editor's files for the file tools; nil for none.
	Editor tools.EditorFiles
	// Elicit asks the user questions (ask_user); nil when the editor
	// shows none.
	Elicit tools.Elicitor
}

// Show is how a turn shows itself to the user (acp: session/update).
type Show interface {
	// Event shows an event of the model loop. It must not block: tool
	// output comes from executor goroutines.
	Event(agent.Event)
	// Say shows text in the answer as a message of its own; the model
	// never sees it.
	Say(text string)
	// Titled shows the session's new title.
	Titled(title string)
	// Ended shows the session's title and last activity at the end of
	// every turn: the editor's history is ordered by it.
	Ended(s *sessions.Session)
	// Noticed shows a finished background task's changes, and returns what
	// it showed, which the session keeps for a replay.
	Noticed(n tools.Noticed) sessions.NoticedView
	// View is what the user was shown of a finished call, which the
	// session keeps for a replay.
	View(call agent.CallInfo, res tools.Result) *sessions.ToolView
}

// Run runs the turn's model loop over in and finishes the turn: its
// messages join the session's history (or the compacted history) and the
// store is synced before End lets a superseding turn start, however the
// turn ended. A failed model loop's error is returned with what it did.
// The loop's input is built here, 12 of its fields from the session.
func (t *Turn) Run(in Input) (agent.Outcome, error) {
	s, r := t.s, t.r
	mcp := r.mcpNotes(s, in.Show)
	t.log.Info("prompt started")
	model := r.Model(s)
	images := promptImages(in.Parts)
	if note := r.imagesNote(s, model, len(images)); note != "" {
		in.Show.Say(note)
	}
	roots := s.Roots()
	prompt := promptText(t.ctx, in.Parts, links{cwd: s.Cwd, roots: roots, files: in.Files, log: t.log})
	project, news := r.instructions(s, roots, prompt)
	rec := &recorder{s: s, show: in.Show, stored: in.Stored, about: in.About}
	out, err := r.opts.Loop.Run(t.ctx, agent.Turn{
		Caller:          tools.Caller{SessionID: s.ID, Cwd: s.Cwd, Roots: roots, Gone: s.TaskGone, Editor: in.Editor, Ask: in.Elicit},
		Extra:           s.Tools(),
		History:         s.History(),
		Prompt:          prompt,
		Images:          images,
		ReadsImages:     r.readsImages(model),
		Model:           s.Model(),
		Thinking:        func() string { return r.ThinkingFor(s, model) },
		Usage:           s.Usage(),
		Notices:         r.notices(s),
		Plan:            s.Plan(),
		Changes:         s.Changes(),
		Approver:        r.approver(s, in.Ask, t.log),
		Project:         project,
		NewInstructions: news,
		Record:          rec.record,
		Emit:            r.emit(s, model, rec, in.Show, mcp),
	})
	mcp.flush()
	t.finish(out, err, in.Show)
	return out, err
}

// finish keeps what the turn did in the session and syncs the store, at
// this turn boundary however the turn ended, then tells the user what the
// turn's end shows.
func (t *Turn) finish(out agent.Outcome, err error, show Show) {
	s := t.s
	t.r.showNoticed(s, show)
	s.Finish(out)
	s.Sync()
	show.Ended(s)
	if news := s.SaveNews(); news != "" {
		// In the answer, where the user reads; the model never sees it.
		show.Say("\n\n" + news)
	}
	switch {
	case err != nil:
		t.log.Warn("prompt failed", zap.Error(err))
	case out.Stop == agent.StopCancelled:
		t.log.Info("prompt cancelled", zap.Error(context.Cause(t.ctx)))
	default:
		t.log.Info("prompt finished", zap.String("stop_reason", string(out.Stop)))
	}
}

// instructions are the session's instruction files for a prompt, and what
// the editor is to be shown of them: the session's reader reads a file
// again only when it changed, and shows the files once and after a change.
// A slash command shows nothing (it sends no system prompt). The
// session's other roots give theirs too.
func (r *Runner) instructions(s *sessions.Session, roots []string, prompt string) (agent.InstructionSet, *agent.InstructionsRead) {
	if _, _, cmd := agent.ParseCommand(prompt); cmd {
		return s.Instructions().ReadRoots(s.Cwd, roots, r.opts.UserInstructions), nil
	}
	return s.Instructions().LoadRoots(s.Cwd, roots, r.opts.UserInstructions)
}

// emit is a turn's event sink: the recorder, then the user (and the MCP
// notices that follow a tool result), then the note about an MCP tool's
// images a model does not read.
func (r *Runner) emit(s *sessions.Session, model string, rec *recorder, show Show, mcp *mcpNotes) func(agent.Event) {
	return func(e agent.Event) {
		rec.observe(e)
		show.Event(e)
		if e.Kind != agent.EventToolResult {
			return
		}
		mcp.flush()
		if note := r.imagesNote(s, model, len(e.Result.Images)); note != "" {
			show.Say(note)
		}
	}
}
