package acp

import (
	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Noticed is what the agent needs of the bash tools to show what a
// background task changed with the notice that reported its end.
type Noticed interface {
	// NoticesDelivered: the session's notices queued so far went with a
	// model request.
	NoticesDelivered(sessionID string)
	// NoticedChanges takes what the tasks of delivered notices changed,
	// but what a bash_output call showed already.
	NoticedChanges(sessionID string) []tools.Noticed
}

// notices is a turn's Notices: the session's completion notices for the
// model, told to the bash tools as delivered.
func (a *Agent) notices(s *sessions.Session) func() []string {
	return func() []string {
		notes := s.DrainNotices()
		if len(notes) > 0 && a.opts.Noticed != nil {
			a.opts.Noticed.NoticesDelivered(s.ID)
		}
		return notes
	}
}

// showNoticed shows, at the end of a turn, a finished tool call for each
// task whose end a notice of the turn reported and that changed files no
// bash_output call of the turn showed.
func (a *Agent) showNoticed(s *sessions.Session, ui *turnUI) {
	if a.opts.Noticed == nil {
		return
	}
	for _, n := range a.opts.Noticed.NoticedChanges(s.ID) {
		ui.send(noticedCall(n))
	}
}

// noticedCall is a finished tool call of kind execute: the notice, then
// what the task changed, with its locations.
func noticedCall(n tools.Noticed) acpsdk.SessionUpdate {
	status := acpsdk.ToolCallStatusCompleted
	if n.Failed {
		status = acpsdk.ToolCallStatusFailed
	}
	opts := []acpsdk.ToolCallStartOpt{
		acpsdk.WithStartKind(acpsdk.ToolKindExecute),
		acpsdk.WithStartStatus(status),
		acpsdk.WithStartContent(append([]acpsdk.ToolCallContent{fenced(n.Text)}, changeContent(n.Changes)...)),
	}
	if n.Raw != nil {
		opts = append(opts, acpsdk.WithStartRawOutput(n.Raw))
	}
	up := acpsdk.StartToolCall(acpsdk.ToolCallId("notice-"+uuid.NewString()), "Background task "+n.TaskID+" finished", opts...)
	// Set as is: WithStartLocations would add a path to rawInput.
	up.ToolCall.Locations = locations(n.Locations)
	return up
}
