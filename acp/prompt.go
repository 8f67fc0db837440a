package acp

import (
	"context"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
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
	tk := a.order.claim(string(p.SessionId))
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
	// cancel. Cancels, supersedes and shutdown reach the turn in wire order
	// (see order and Serve).
	tctx, end, err := a.order.beginTurn(context.WithoutCancel(ctx), s, tk)
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	// The next turn of this session may start once this prompt's reply is
	// on the wire, not before: the editor must see "cancelled" first.
	defer a.afterReply(tk.id, end)
	if tctx.Err() != nil {
		log.Info("prompt superseded before it started", zap.Error(context.Cause(tctx)))
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}

	a.mu.Lock()
	terminal := a.terminalOutput
	a.mu.Unlock()
	ui := newTurnUI(conn, p.SessionId, terminal, a.opts.UpdateTicker, context.WithoutCancel(ctx), log)
	defer ui.close()
	emit, flushNotes := a.mcpNotes(s, ui)

	log.Info("prompt started")
	rec := &recorder{a: a, ctx: ctx, s: s, blocks: p.Prompt}
	out, runErr := a.opts.Loop.Run(tctx, agent.Turn{
		Caller:   tools.Caller{SessionID: s.ID, Cwd: s.Cwd, Gone: s.TaskGone},
		Extra:    s.Tools(),
		History:  s.History(),
		Prompt:   promptText(tctx, p.Prompt, a.links(s, conn, log)),
		Model:    s.Model(),
		Usage:    s.Usage(),
		Notices:  s.DrainNotices,
		Plan:     s.Plan(),
		Approver: a.approver(s, conn, log),
		// The session's reader: a file is read again only when it changed,
		// and the editor is shown the files once and after a change.
		Instructions: s.Instructions(),
		Record:       rec.record,
		Emit: func(e agent.Event) {
			rec.observe(e)
			emit(e)
		},
	})
	flushNotes()
	// History is appended before end() lets a superseding turn start, so the
	// next turn sees this one's messages (or the compacted history); the
	// store is synced at this turn boundary, however the turn ended.
	s.Finish(out)
	s.Sync()
	if runErr != nil {
		log.Warn("prompt failed", zap.Error(runErr))
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32603, Message: runErr.Error()}
	}
	if out.Stop == agent.StopCancelled {
		log.Info("prompt cancelled", zap.Error(context.Cause(tctx)))
	} else {
		log.Info("prompt finished", zap.String("stop_reason", string(out.Stop)))
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReason(out.Stop)}, nil
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
			parts = append(parts, "[image omitted: this agent does not read images]")
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
