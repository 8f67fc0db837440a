package agent

import (
	"encoding/json"
)

// DefaultContextWindow is the context window assumed for a model the table
// of known models does not list, in tokens.
const DefaultContextWindow = 128_000

// DefaultCompactAt is the share of the context window past which the next
// request is compacted first.
const DefaultCompactAt = 0.8

// bytesPerToken is the estimate used when an endpoint reports no usage.
const bytesPerToken = 4

// ContextWindow is the context window of model in tokens: the table of known
// models (by the model's own id, also behind a gateway's vendor/ prefix),
// else DefaultContextWindow.
func ContextWindow(model string) int {
	if m, ok := knownModels[ModelID(model)]; ok {
		return m.window
	}
	return DefaultContextWindow
}

// ContextUsage is how full the context window is after a model response.
type ContextUsage struct {
	// Used is the tokens of the last request, prompt and completion.
	Used int
	// Size is the model's context window in tokens; zero means unknown (no
	// response yet).
	Size int
	// Estimated: the endpoint reported no usage, so Used is an estimate of
	// bytesPerToken bytes a token.
	Estimated bool
	// Cost is the session's cumulative cost so far; an empty Currency
	// means none is known.
	Cost Cost
}

// estimateText is the tokens of s by the bytes-per-token estimate, rounded
// up.
func estimateText(n int) int {
	return (n + bytesPerToken - 1) / bytesPerToken
}

// messageBytes is what a message adds to a request, roughly: its text, its
// calls and a few bytes of framing. Reasoning is left out: providers send it
// back only in the current turn, if at all.
func messageBytes(m Message) int {
	n := len(m.Content) + len(m.Role) + len(m.ToolCallID) + 8
	// An image costs what the model makes of it, not its bytes: about a
	// thousand tokens is what vision models charge for a screenshot.
	n += len(m.Images) * 1000 * bytesPerToken
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + 16
	}
	return n
}

// EstimateMessages is the estimated tokens of msgs.
func EstimateMessages(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += messageBytes(m)
	}
	return estimateText(n)
}

// estimateRequest is the estimated tokens of a whole request: every message
// and the tool schemas.
func estimateRequest(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += messageBytes(m)
	}
	if len(req.Tools) > 0 {
		b, _ := json.Marshal(req.Tools)
		n += len(b)
	}
	return estimateText(n)
}

// completionTokens is the estimated size of an answer, reasoning included.
func completionTokens(m Message) int {
	return estimateText(messageBytes(m) + len(m.ReasoningContent))
}
