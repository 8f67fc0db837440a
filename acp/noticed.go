package acp

import (
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// noticedView is what the editor was shown of a notice's tool call, kept
// as the JSON it got so that a replay sends the same bytes.
func noticedView(n tools.Noticed, c *acpsdk.SessionUpdateToolCall) sessions.NoticedView {
	v := sessions.NoticedView{ID: string(c.ToolCallId), TaskID: n.TaskID, Text: n.Text, Title: c.Title, Kind: string(c.Kind), Status: string(c.Status),
		Changed: n.Changed}
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
