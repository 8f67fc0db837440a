package openai

import (
	"encoding/json"
	"fmt"

	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/dsh-acp/dsh-acp/agent"
)

func (p *Provider) buildParams(req agent.Request) (openaisdk.ChatCompletionNewParams, error) {
	params := openaisdk.ChatCompletionNewParams{Model: p.model}
	keep := keepReasoning(req.Messages)
	for i, m := range req.Messages {
		switch m.Role {
		case agent.RoleSystem:
			params.Messages = append(params.Messages, openaisdk.SystemMessage(m.Content))
		case agent.RoleUser:
			params.Messages = append(params.Messages, openaisdk.UserMessage(m.Content))
		case agent.RoleTool:
			params.Messages = append(params.Messages, openaisdk.ToolMessage(m.Content, m.ToolCallID))
		case agent.RoleAssistant:
			params.Messages = append(params.Messages, assistantParam(m, keep[i]))
		default:
			return params, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return params, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openaisdk.String(t.Description)
		}
		params.Tools = append(params.Tools, openaisdk.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

func assistantParam(m agent.Message, withReasoning bool) openaisdk.ChatCompletionMessageParamUnion {
	var a openaisdk.ChatCompletionAssistantMessageParam
	// Content may be left out only when there are tool calls; an answer
	// with neither must still say content "" or servers reject it.
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openaisdk.String(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openaisdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openaisdk.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openaisdk.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: tc.Arguments,
				},
			},
		})
	}
	if withReasoning && m.ReasoningContent != "" {
		a.SetExtraFields(map[string]any{"reasoning_content": m.ReasoningContent})
	}
	return openaisdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
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
