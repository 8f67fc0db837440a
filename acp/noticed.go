package acp

import (
	"encoding/json"

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
// bash_output call of the turn showed; each is stored with the session,
// for session/load to show it again.
func (a *Agent) showNoticed(s *sessions.Session, ui *turnUI) {
	if a.opts.Noticed == nil {
		return
	}
	for _, n := range a.opts.Noticed.NoticedChanges(s.ID) {
		up := noticedCall(n)
		ui.send(up)
		s.AddNoticed(noticedView(n, up.ToolCall))
	}
}

// noticedView is what the editor was shown of a notice's tool call, kept
// as the JSON it got so that a replay sends the same bytes.
func noticedView(n tools.Noticed, c *acpsdk.SessionUpdateToolCall) sessions.NoticedView {
	v := sessions.NoticedView{ID: string(c.ToolCallId), TaskID: n.TaskID, Text: n.Text, Title: c.Title, Kind: string(c.Kind), Status: string(c.Status)}
	v.Content, _ = json.Marshal(c.Content)
	if len(c.Locations) > 0 {
		v.Locations, _ = json.Marshal(c.Locations)
	}
	if c.RawOutput != nil {
		v.RawOutput, _ = json.Marshal(c.RawOutput)
	}
	return v
}

// replayedNoticed is a stored notice's tool call as the editor was shown
// it; the notice's text alone when its content was not kept.
func replayedNoticed(v *sessions.NoticedView) acpsdk.SessionUpdate {
	var content []acpsdk.ToolCallContent
	if len(v.Content) == 0 || json.Unmarshal(v.Content, &content) != nil {
		content = []acpsdk.ToolCallContent{fenced(v.Text)}
	}
	opts := []acpsdk.ToolCallStartOpt{
		acpsdk.WithStartKind(acpsdk.ToolKind(v.Kind)),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatus(v.Status)),
		acpsdk.WithStartContent(content),
	}
	if len(v.RawOutput) > 0 {
		opts = append(opts, acpsdk.WithStartRawOutput(v.RawOutput))
	}
	up := acpsdk.StartToolCall(acpsdk.ToolCallId(v.ID), v.Title, opts...)
	var locs []acpsdk.ToolCallLocation
	if len(v.Locations) > 0 && json.Unmarshal(v.Locations, &locs) == nil {
		// Set as is: WithStartLocations would add a path to rawInput.
		up.ToolCall.Locations = locs
	}
	return up
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
