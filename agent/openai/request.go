package openai

import (
	"encoding/json"
	"fmt"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/dsh-acp/dsh-acp/agent"
)

// emptySchema is sent for a tool that declares no parameters: servers
// reject "parameters": null.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (p *Provider) buildRequest(req agent.Request) (goopenai.ChatCompletionRequest, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := goopenai.ChatCompletionRequest{
		Model: model,
		// Usage arrives as one last chunk with no choices.
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	keep := keepReasoning(req.Messages)
	for i, m := range req.Messages {
		msg := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case agent.RoleSystem, agent.RoleUser:
		case agent.RoleTool:
			msg.ToolCallID = m.ToolCallID
		case agent.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				// An empty answer carries nothing the model needs, and
				// go-openai leaves an empty content out, which servers
				// reject on an assistant message without tool calls.
				continue
			}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, goopenai.ToolCall{
					ID:       tc.ID,
					Type:     goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
				})
			}
			if keep[i] {
				msg.ReasoningContent = m.ReasoningContent
			}
		default:
			return out, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		out.Messages = append(out.Messages, msg)
	}
	for _, t := range req.Tools {
		schema := emptySchema
		if len(t.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(t.Parameters, &obj); err != nil || obj == nil {
				return out, fmt.Errorf("tool %q: parameters are not a JSON object", t.Name)
			}
			schema = t.Parameters
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type:     goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: schema},
		})
	}
	return out, nil
}

// keepReasoning decides, per message, whether an assistant message's
// reasoning_content is sent back. DeepSeek's thinking-mode guide
// (https://api-docs.deepseek.com/guides/thinking_mode, "Thinking Mode" →
// input/output parameters, multi-turn and tool-call sections) says:
//
//   - between two user messages, if the model made no tool call, the
//     assistant's reasoning_content need not be sent and is ignored if it is;
//   - between two user messages, if the model made tool calls, the
//     reasoning_content of those assistant messages must be sent back in
//     every later request, including after the next user message. Leaving
//     it out is a 400 ("Missing `reasoning_content` field in the assistant
//     message at message index N"; cf. zed-industries/zed#44301).
//
// So: everything after the last user message (the tool-call loop under way)
// is kept; before it, a user turn's reasoning is kept only if that turn made
// a tool call, and dropped otherwise to save tokens. The older
// deepseek-reasoner guide, which rejected any reasoning_content in input,
// predates tool calls in thinking mode and no longer applies.
func keepReasoning(msgs []agent.Message) []bool {
	keep := make([]bool, len(msgs))
	lastUser := -1
	for i, m := range msgs {
		if m.Role == agent.RoleUser {
			lastUser = i
		}
	}
	// Walk user turns: [start, end) spans from one user message to the next.
	start := 0
	for start < len(msgs) {
		end := start + 1
		for end < len(msgs) && msgs[end].Role != agent.RoleUser {
			end++
		}
		usedTools := false
		for _, m := range msgs[start:end] {
			if m.Role == agent.RoleAssistant && len(m.ToolCalls) > 0 {
				usedTools = true
			}
		}
		for i := start; i < end; i++ {
			keep[i] = msgs[i].Role == agent.RoleAssistant && (usedTools || i > lastUser)
		}
		start = end
	}
	return keep
}
