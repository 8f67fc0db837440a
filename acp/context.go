package acp

import (
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
)

// compactionTitle is the editor's title of a compaction (tool-text.md).
const compactionTitle = "Compact conversation"

// messageChunk is an answer piece with the id of its model message, which
// the SDK's helpers leave unset.
func messageChunk(e agent.Event) acpsdk.SessionUpdate {
	return acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{
		Content: acpsdk.TextBlock(e.Text), MessageId: messageID(e),
	}}
}

// thoughtChunk is a reasoning piece with the id of its model message.
func thoughtChunk(e agent.Event) acpsdk.SessionUpdate {
	return acpsdk.SessionUpdate{AgentThoughtChunk: &acpsdk.SessionUpdateAgentThoughtChunk{
		Content: acpsdk.TextBlock(e.Text), MessageId: messageID(e),
	}}
}

func messageID(e agent.Event) *string {
	if e.MessageID == "" {
		return nil
	}
	return acpsdk.Ptr(e.MessageID)
}

// usageUpdate is the context ring, with the session's cumulative cost when
// one is known. An estimate says so in _meta, so a client (and a reader of
// the log) can tell it from a count.
func usageUpdate(u agent.ContextUsage) acpsdk.SessionUpdate {
	up := &acpsdk.SessionUsageUpdate{Used: u.Used, Size: u.Size}
	if u.Cost.Currency != "" {
		up.Cost = &acpsdk.Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
	}
	if u.Estimated {
		up.Meta = map[string]any{"estimated": true}
	}
	return acpsdk.SessionUpdate{UsageUpdate: up}
}

// compactionStart shows a compaction as a thinking step in progress.
func compactionStart(c agent.Compaction) acpsdk.SessionUpdate {
	return acpsdk.StartToolCall(acpsdk.ToolCallId(c.ID), compactionTitle,
		acpsdk.WithStartKind(acpsdk.ToolKindThink),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusInProgress),
		acpsdk.WithStartRawInput(compactionInput(c)),
	)
}

func compactionInput(c agent.Compaction) map[string]any {
	in := map[string]any{"trigger": c.Trigger}
	if c.Focus != "" {
		in["focus"] = c.Focus
	}
	return in
}

// compactionEnd completes the step with what it did, in the shape
// claude-agent-acp and codex-acp use (_meta.contextCompaction), or fails it
// with the reason; the history is then untouched.
func compactionEnd(c agent.Compaction, err error) acpsdk.SessionUpdate {
	if err != nil {
		return acpsdk.UpdateToolCall(acpsdk.ToolCallId(c.ID),
			acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusFailed),
			acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock("Compaction failed: " + err.Error()))}),
		)
	}
	up := acpsdk.UpdateToolCall(acpsdk.ToolCallId(c.ID),
		acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusCompleted),
		acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(
			fmt.Sprintf("%d messages summarized; %d → %d tokens", c.Summarized(), c.PreTokens, c.PostTokens)))}),
	)
	up.ToolCallUpdate.Meta = map[string]any{"contextCompaction": map[string]any{
		"trigger": c.Trigger, "preTokens": c.PreTokens, "postTokens": c.PostTokens,
	}}
	return up
}
