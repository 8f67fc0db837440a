package acp

import (
	"context"
	"encoding/json"
	"errors"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/turn"
)

// Prompt runs one turn (package turn runs it; this translates). A newer
// prompt on the same session supersedes this one (it ends "cancelled"
// before the newer one starts); other sessions are never blocked by it.
func (a *Agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (resp acpsdk.PromptResponse, err error) {
	defer a.recoverTo("session/prompt", &err)
	sid := string(p.SessionId)
	// First of all, so the session's next prompt (held back until then)
	// can go to the SDK.
	tk := a.wire.Claim(sid)
	conn := a.client()
	if conn == nil {
		return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": "no client connection"})
	}
	t, err := a.opts.Turns.Begin(ctx, sid, tk.Seq)
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	// The next turn of this session may start once this prompt's reply is
	// on the wire, not before: the editor must see "cancelled" first.
	defer a.wire.AfterReply(tk, t.End)
	if t.Superseded() {
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	a.wire.WaitEarlier(sid, tk)
	if a.announce.takePrompt(sid) {
		a.announceCommands(sid)
	}
	ui := a.newTurnUI(ctx, conn, p.SessionId)
	defer ui.close()
	stored, _ := json.Marshal(storedBlocks(p.Prompt))
	return promptResponse(t.Run(turn.Input{
		Parts: promptParts(p.Prompt), Stored: stored, About: promptAbout(p.Prompt),
		Show: ui, Ask: asker{sid: p.SessionId, conn: conn},
		Files: a.linkFiles(p.SessionId, conn), Editor: a.editor(sid, conn), Elicit: a.elicitorFor(sid, conn),
	}))
}

// linkFiles reads a prompt's linked files through the client when it said
// it reads files; nil otherwise (the turn reads them from disk).
func (a *Agent) linkFiles(sid acpsdk.SessionId, conn client) turn.FileReader {
	a.mu.Lock()
	readsFiles := a.clientReadsFiles
	a.mu.Unlock()
	if fr, ok := conn.(fileReader); ok && readsFiles {
		return linkFiles{sid: sid, r: fr}
	}
	return nil
}

// promptResponse is the turn's outcome as the prompt's reply.
func promptResponse(out agent.Outcome, err error) (acpsdk.PromptResponse, error) {
	if errors.Is(err, agent.ErrAuthRequired) {
		// The editor offers its sign-in (authMethods) on this code.
		return acpsdk.PromptResponse{}, authRequired(err)
	}
	if err != nil {
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32603, Message: err.Error()}
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

// promptParts are the prompt's blocks as package turn reads them.
func promptParts(blocks []acpsdk.ContentBlock) []turn.Part {
	parts := make([]turn.Part, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, turn.Part{Kind: turn.TextPart, Text: b.Text.Text})
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, turn.Part{Kind: turn.ResourcePart, URI: r.Uri, Text: r.Text})
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			parts = append(parts, turn.Part{Kind: turn.BlobPart, URI: b.Resource.Resource.BlobResourceContents.Uri})
		case b.ResourceLink != nil:
			parts = append(parts, turn.Part{Kind: turn.LinkPart, Name: b.ResourceLink.Name, URI: b.ResourceLink.Uri})
		case b.Image != nil:
			parts = append(parts, turn.Part{Kind: turn.ImagePart, MimeType: b.Image.MimeType, Data: b.Image.Data, URI: deref(b.Image.Uri)})
		case b.Audio != nil:
			parts = append(parts, turn.Part{Kind: turn.AudioPart})
		}
	}
	return parts
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// say is text shown in the answer as a message of its own.
func say(text string) acpsdk.SessionUpdate {
	return messageChunk(agent.Event{Text: text, MessageID: uuid.NewString()})
}
