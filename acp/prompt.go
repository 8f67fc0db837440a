package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Prompt runs one turn. A newer prompt on the same session supersedes this
// one (it ends "cancelled" before the newer one starts); other sessions are
// never blocked by it.
func (a *Agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (resp acpsdk.PromptResponse, err error) {
	defer a.recoverTo("session/prompt", &err)
	// First of all, so the session's next prompt (held back until then)
	// can go to the SDK.
	tk := a.wire.Claim(string(p.SessionId))
	s, err := a.opts.Sessions.Get(string(p.SessionId))
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	log := a.sessionLogger(s.ID)
	conn := a.client()
	if conn == nil {
		return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": "no client connection"})
	}

	// The turn is not bound to the SDK's request context: the SDK cancels
	// that for every session/cancel and newer prompt of the session as its
	// handlers happen to run, which can hit a prompt written after the
	// cancel. Cancels, supersedes and shutdown reach the turn, which the
	// session owns, in wire order: the ticket and wire.Sessions.
	tctx, end, err := s.BeginTurn(context.WithoutCancel(ctx), sessions.Ticket(tk.Seq))
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	// The next turn of this session may start once this prompt's reply is
	// on the wire, not before: the editor must see "cancelled" first.
	defer a.wire.AfterReply(tk, end)
	if tctx.Err() != nil {
		log.Info("prompt superseded before it started", zap.Error(context.Cause(tctx)))
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	a.wire.WaitEarlier(s.ID, tk)

	if a.announce.takePrompt(s.ID) {
		a.announceCommands(s.ID)
	}
	a.mu.Lock()
	terminal := a.terminalOutput
	a.mu.Unlock()
	ui := newTurnUI(conn, p.SessionId, terminal, a.opts.UpdateTicker, context.WithoutCancel(ctx), log)
	defer ui.close()
	emit, flushNotes := a.mcpNotes(s, ui)

	log.Info("prompt started")
	images := promptImages(p.Prompt)
	model := a.sessionModel(s)
	a.noteImages(ctx, s, model, len(images))
	rec := &recorder{a: a, ctx: ctx, s: s, blocks: p.Prompt}
	out, runErr := a.opts.Loop.Run(tctx, agent.Turn{
		Caller:      tools.Caller{SessionID: s.ID, Cwd: s.Cwd, Gone: s.TaskGone, Editor: a.editor(s.ID, conn), Ask: a.elicitorFor(s.ID, conn)},
		Extra:       s.Tools(),
		History:     s.History(),
		Prompt:      promptText(tctx, p.Prompt, a.links(s, conn, log)),
		Images:      images,
		ReadsImages: a.readsImages(model),
		Model:       s.Model(),
		Thinking:    func() string { return a.thinkingFor(s, model) },
		Usage:       s.Usage(),
		Notices:     a.notices(s),
		Plan:        s.Plan(),
		Approver:    a.approver(s, conn, log),
		// The session's reader: a file is read again only when it changed,
		// and the editor is shown the files once and after a change.
		Instructions: s.Instructions(),
		Record:       rec.record,
		Emit:         a.turnEmit(s, model, rec, ui, emit),
	})
	flushNotes()
	a.showNoticed(s, ui)
	// History is appended before end() lets a superseding turn start, so the
	// next turn sees this one's messages (or the compacted history); the
	// store is synced at this turn boundary, however the turn ended.
	s.Finish(out)
	s.Sync()
	// Every turn: the editor's history is ordered by it.
	ui.send(sessionInfo(s))
	if news := s.SaveNews(); news != "" {
		// In the answer, where the user reads; the model never sees it.
		ui.send(messageChunk(agent.Event{Text: "\n\n" + news, MessageID: uuid.NewString()}))
	}
	if runErr != nil {
		log.Warn("prompt failed", zap.Error(runErr))
		if errors.Is(runErr, agent.ErrAuthRequired) {
			// The editor offers its sign-in (authMethods) on this code.
			return acpsdk.PromptResponse{}, authRequired(runErr)
		}
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32603, Message: runErr.Error()}
	}
	if out.Stop == agent.StopCancelled {
		log.Info("prompt cancelled", zap.Error(context.Cause(tctx)))
	} else {
		log.Info("prompt finished", zap.String("stop_reason", string(out.Stop)))
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReason(out.Stop), Usage: turnUsage(out.Spent), Meta: turnCost(out.Cost)}, nil
}

// turnUsage is what the turn's model requests counted; nil when the
// endpoint counted none.
func turnUsage(u agent.Usage) *acpsdk.Usage {
	if !u.Reported {
		return nil
	}
	return &acpsdk.Usage{
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, CachedReadTokens: acpsdk.Ptr(u.CachedTokens),
	}
}

// turnCost is what the turn cost, in _meta.cost (usage_update.cost is the
// session's total); nil when unknown.
func turnCost(c agent.Cost) map[string]any {
	if c.Currency == "" {
		return nil
	}
	return map[string]any{"cost": map[string]any{"amount": c.Amount, "currency": c.Currency}}
}

// promptImages are the prompt's image blocks, in order, named by their
// URI when they have one.
func promptImages(blocks []acpsdk.ContentBlock) []agent.Image {
	var out []agent.Image
	for _, b := range blocks {
		if b.Image == nil || b.Image.Data == "" {
			continue
		}
		name := fmt.Sprintf("image %d", len(out)+1)
		if b.Image.Uri != nil && *b.Image.Uri != "" {
			name = *b.Image.Uri
		}
		out = append(out, agent.Image{MimeType: b.Image.MimeType, Data: b.Image.Data, Name: name})
	}
	return out
}

// readsImages reports whether the model is sent images: --images on, or a
// model known to read them (unless --images off).
func (a *Agent) readsImages(model string) bool {
	switch a.opts.Images {
	case "on":
		return true
	case "off":
		return false
	}
	return agent.ReadsImages(model)
}

// turnEmit is a turn's event sink: the recorder, then the editor, then
// the note about an MCP tool's images a model does not read.
func (a *Agent) turnEmit(s *sessions.Session, model string, rec *recorder, ui *turnUI, emit func(agent.Event)) func(agent.Event) {
	return func(e agent.Event) {
		rec.observe(e)
		emit(e)
		if e.Kind == agent.EventToolResult {
			if note := a.imagesNote(s, model, len(e.Result.Images)); note != "" {
				ui.send(messageChunk(agent.Event{Text: note, MessageID: uuid.NewString()}))
			}
		}
	}
}

// noteImages tells the user, once per session, in the answer, that the
// model does not read the images they sent.
func (a *Agent) noteImages(ctx context.Context, s *sessions.Session, model string, images int) {
	if text := a.imagesNote(s, model, images); text != "" {
		a.sendUpdate(ctx, s.ID, messageChunk(agent.Event{Text: text, MessageID: uuid.NewString()}))
	}
}

// imagesNote is what the user is told, once per session, when model is
// not sent images (of a prompt, or an MCP tool's); "" when there is
// nothing to tell.
func (a *Agent) imagesNote(s *sessions.Session, model string, images int) string {
	if images == 0 || a.readsImages(model) {
		return ""
	}
	if _, told := a.imagesNoted.LoadOrStore(s.ID, true); told {
		return ""
	}
	return fmt.Sprintf("(%s does not read images, so it is told only that an image was left out. Choose a model that reads them, such as %s, or start dsh-acp with --images on if this one does.)\n\n",
		model, agent.ModelDeepSeekFlash)
}

// links reads the files a prompt of s links to: through the client when it
// said it reads files, else from disk inside the session's cwd.
func (a *Agent) links(s *sessions.Session, conn client, log *zap.Logger) *linkReader {
	r := &linkReader{sid: acpsdk.SessionId(s.ID), cwd: s.Cwd, log: log}
	a.mu.Lock()
	readsFiles := a.clientReadsFiles
	a.mu.Unlock()
	if fr, ok := conn.(fileReader); ok && readsFiles {
		r.client = fr
	}
	return r
}

// promptText flattens the prompt's blocks into the user message: text as
// is, embedded text resources inlined with their URI, linked files inlined
// with their path when links can read them (nil: none is read), other
// links by name and URI.
func promptText(ctx context.Context, blocks []acpsdk.ContentBlock, links *linkReader) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, contextText(r.Uri, "", r.Text))
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			parts = append(parts, fmt.Sprintf("[binary resource %s omitted]", b.Resource.Resource.BlobResourceContents.Uri))
		case b.ResourceLink != nil:
			parts = append(parts, linkText(ctx, b.ResourceLink, links))
		case b.Image != nil:
			// Sent as an image part (promptImages), or replaced by
			// agent.ImageNote for a model that does not read images.
		case b.Audio != nil:
			parts = append(parts, "[audio omitted: this agent does not read audio]")
		}
	}
	return strings.Join(parts, "\n")
}

// linkText is a linked file's text with its path, or the link alone.
func linkText(ctx context.Context, l *acpsdk.ContentBlockResourceLink, links *linkReader) string {
	if links != nil {
		if path, text, ok := links.read(ctx, l); ok {
			return contextText(l.Uri, path, text)
		}
	}
	return fmt.Sprintf("[@%s](%s)", l.Name, l.Uri)
}
