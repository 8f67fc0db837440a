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

// reasoningField is a reasoning text an assistant message carries back to
// the endpoint, which go-openai cannot encode when it is empty or named
// "reasoning".
type reasoningField struct {
	// pos is the message's position in the encoded request.
	pos         int
	name, value string
}

// build is req in go-openai's types; reasoning sent back is left out and
// listed for encodeRequest.
func (p *Provider) build(req agent.Request, slots *imageSlots) (goopenai.ChatCompletionRequest, []reasoningField, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := goopenai.ChatCompletionRequest{
		Model:  model,
		Stream: true,
		// Usage arrives as one last chunk with no choices.
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	msgs, extras, err := messages(req.Messages, agent.IsDeepSeek(model), slots)
	if err != nil {
		return out, nil, err
	}
	out.Messages = msgs
	if out.Tools, err = toolDefs(req.Tools); err != nil {
		return out, nil, err
	}
	return out, extras, nil
}

// messages are the conversation in go-openai's types, and the reasoning
// fields go-openai cannot encode, for encodeRequest. Images go into slots
// (see newBody); nil slots puts them in whole.
func messages(in []agent.Message, deepseek bool, slots *imageSlots) ([]goopenai.ChatCompletionMessage, []reasoningField, error) {
	var out []goopenai.ChatCompletionMessage
	var extras []reasoningField
	// pending are images of tool results, sent after the last of them:
	// the chat API takes images in user messages only.
	var pending []agent.Image
	keep := keepReasoning(in)
	for i, m := range in {
		if len(pending) > 0 && m.Role != agent.RoleTool {
			out = append(out, toolImagesMessage(pending, slots))
			pending = nil
		}
		msg := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case agent.RoleUser:
			if len(m.Images) > 0 {
				msg.Content, msg.MultiContent = "", imageParts(m, slots)
			}
		case agent.RoleSystem:
		case agent.RoleTool:
			msg.ToolCallID = m.ToolCallID
			pending = append(pending, m.Images...)
		case agent.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				// An empty answer carries nothing the model needs, and
				// go-openai leaves an empty content out, which servers
				// reject on an assistant message without tool calls.
				continue
			}
			msg.ToolCalls = toolCalls(m.ToolCalls)
			if f, ok := sentReasoning(m, keep[i], deepseek); ok {
				f.pos = len(out)
				extras = append(extras, f)
			}
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		out = append(out, msg)
	}
	if len(pending) > 0 {
		out = append(out, toolImagesMessage(pending, slots))
	}
	return out, extras, nil
}

// toolCalls are an assistant message's calls in go-openai's types; nil
// when none.
func toolCalls(calls []agent.ToolCall) []goopenai.ToolCall {
	var out []goopenai.ToolCall
	for _, tc := range calls {
		out = append(out, goopenai.ToolCall{
			ID:       tc.ID,
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return out
}

// toolDefs are the tools offered, in go-openai's types.
func toolDefs(specs []agent.ToolSpec) ([]goopenai.Tool, error) {
	var out []goopenai.Tool
	for _, t := range specs {
		schema := emptySchema
		if len(t.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(t.Parameters, &obj); err != nil || obj == nil {
				return nil, fmt.Errorf("tool %q: parameters are not a JSON object", t.Name)
			}
			schema = t.Parameters
		}
		out = append(out, goopenai.Tool{
			Type:     goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: schema},
		})
	}
	return out, nil
}

// imageParts is a user message with images as content parts: its text,
// then each image as an image_url with a data: URL.
func imageParts(m agent.Message, slots *imageSlots) []goopenai.ChatMessagePart {
	parts := make([]goopenai.ChatMessagePart, 0, len(m.Images)+1)
	if m.Content != "" {
		parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: m.Content})
	}
	for _, img := range m.Images {
		parts = append(parts, goopenai.ChatMessagePart{
			Type:     goopenai.ChatMessagePartTypeImageURL,
			ImageURL: &goopenai.ChatMessageImageURL{URL: slots.url(img)},
		})
	}
	return parts
}

// toolImagesMessage carries images tool calls returned.
func toolImagesMessage(images []agent.Image, slots *imageSlots) goopenai.ChatCompletionMessage {
	return goopenai.ChatCompletionMessage{Role: string(agent.RoleUser),
		MultiContent: imageParts(agent.Message{Content: "Images returned by the tool calls above:", Images: images}, slots)}
}

// imageNames names the images req carries, for an error about them.
func imageNames(req agent.Request) []string {
	var names []string
	for _, m := range req.Messages {
		for i, img := range m.Images {
			name := img.Name
			if name == "" {
				name = fmt.Sprintf("image %d (%s)", i+1, img.MimeType)
			}
			names = append(names, fmt.Sprintf("%q", name))
		}
	}
	return names
}

// sentReasoning is the reasoning an assistant message carries back, if
// any. DeepSeek's thinking mode wants reasoning_content on every kept
// message, also when it is empty ("The `reasoning_content` in the thinking
// mode must be passed back to the API" otherwise); any other endpoint gets
// back only a non-empty reasoning, in the field it sent it in.
func sentReasoning(m agent.Message, keep, deepseek bool) (reasoningField, bool) {
	switch {
	case !keep:
		return reasoningField{}, false
	case deepseek:
		return reasoningField{name: "reasoning_content", value: m.ReasoningContent}, true
	case m.ReasoningContent == "":
		return reasoningField{}, false
	}
	name := m.ReasoningField
	if name == "" {
		name = "reasoning_content"
	}
	return reasoningField{name: name, value: m.ReasoningContent}, true
}

// encodeRequest is the JSON body of a request: go-openai's encoding of params,
// plus what its types cannot say — reasoning sent back (also empty) and
// the thinking fields, sent only when req asks for a thought level.
func encodeRequest(params goopenai.ChatCompletionRequest, extras []reasoningField, thinking string) ([]byte, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, err
	}
	if len(extras) > 0 {
		var msgs []map[string]any
		if err := json.Unmarshal(body["messages"], &msgs); err != nil {
			return nil, err
		}
		for _, f := range extras {
			msgs[f.pos][f.name] = f.value
		}
		if body["messages"], err = json.Marshal(msgs); err != nil {
			return nil, err
		}
	}
	for k, v := range thinkingFields(params.Model, thinking) {
		body[k] = v
	}
	return json.Marshal(body)
}

// thinkingFields are the request fields of a thought level. DeepSeek
// (https://api-docs.deepseek.com/guides/thinking_mode, read 2026-12-01):
// "thinking": {"type": "enabled"|"disabled"} and reasoning_effort high or
// max. Any other model, whose user said it takes one (--thinking), gets
// OpenAI's reasoning_effort alone: "none" for off, "xhigh" (OpenAI's
// highest) for max.
func thinkingFields(model, level string) map[string]json.RawMessage {
	if level == "" {
		return nil
	}
	q := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	if !agent.IsDeepSeek(model) {
		switch level {
		case agent.ThinkingOff:
			level = "none"
		case agent.ThinkingMax:
			level = "xhigh"
		}
		return map[string]json.RawMessage{"reasoning_effort": q(level)}
	}
	if level == agent.ThinkingOff {
		return map[string]json.RawMessage{"thinking": json.RawMessage(`{"type":"disabled"}`)}
	}
	return map[string]json.RawMessage{"thinking": json.RawMessage(`{"type":"enabled"}`), "reasoning_effort": q(level)}
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
