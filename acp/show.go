package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/turn"
)

var _ turn.Show = (*turnUI)(nil)

// newTurnUI is the editor as a turn of session sid shows itself to it.
// Its updates outlive the request's cancel: the final ones after a cancel
// must still reach the client.
func (a *Agent) newTurnUI(ctx context.Context, conn client, sid acpsdk.SessionId) *turnUI {
	a.mu.Lock()
	terminal := a.terminalOutput
	a.mu.Unlock()
	return newTurnUI(conn, sid, terminal, a.opts.UpdateTicker, context.WithoutCancel(ctx), a.sessionLogger(string(sid)))
}

// Event is the agent's Emit. It must not block for EventToolOutput.
func (u *turnUI) Event(e agent.Event) { u.handle(e) }

// Say shows text in the answer as a message of its own.
func (u *turnUI) Say(text string) { u.send(say(text)) }

// Titled tells the editor the session's new title.
func (u *turnUI) Titled(title string) {
	u.send(acpsdk.SessionUpdate{SessionInfoUpdate: &acpsdk.SessionSessionInfoUpdate{Title: acpsdk.Ptr(title)}})
}

// Ended sends the session's info, which orders the editor's history.
func (u *turnUI) Ended(s *sessions.Session) { u.send(sessionInfo(s)) }

// Noticed shows a finished tool call for a task whose end a notice
// reported, and returns it as the session keeps it.
func (u *turnUI) Noticed(n tools.Noticed) sessions.NoticedView {
	up := noticedCall(n)
	u.send(up)
	return noticedView(n, up.ToolCall)
}

// View is what the editor saw of a finished call (toolView).
func (u *turnUI) View(c agent.CallInfo, r tools.Result) *sessions.ToolView { return toolView(c, r) }
