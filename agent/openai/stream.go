package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/dsh-acp/dsh-acp/agent"
)

// reasoningFields are the delta fields that carry thinking text, in order of
// preference: DeepSeek (and SGLang, older vLLM) send reasoning_content;
// Ollama, newer vLLM and OpenRouter send reasoning. openai-go has no typed
// field for either, so they are read from the delta's extra JSON fields.
var reasoningFields = []string{"reasoning_content", "reasoning"}

// accumulator folds the chunks of one streamed answer into a Response.
// openai-go's ChatCompletionAccumulator is not used because it drops the
// untyped reasoning fields and we need to emit deltas as they arrive anyway.
type accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []agent.ToolCall
	// slot maps a tool call's stream index to its position in calls.
	slot map[int64]int
	// finish is the raw finish_reason; finished is set once one arrived.
	finish   string
	finished bool
}

func (a *accumulator) add(chunk openaisdk.ChatCompletionChunk, emit func(agent.Delta)) {
	for _, choice := range chunk.Choices {
		// We never ask for n > 1; anything beyond the first choice is not ours.
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if r := reasoningOf(d); r != "" {
			a.reasoning.WriteString(r)
			emit(agent.Delta{Reasoning: r})
		}
		if d.Content != "" {
			a.text.WriteString(d.Content)
			emit(agent.Delta{Text: d.Content})
		}
		for _, tc := range d.ToolCalls {
			a.addToolCall(tc)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
			a.finished = true
		}
	}
}

// addToolCall merges one tool-call fragment. The first fragment of a call
// carries its id and name, later ones only more of the arguments text, all
// under the same index. A fragment whose id differs from the one already at
// its index starts a new call: some servers number every call 0.
func (a *accumulator) addToolCall(tc openaisdk.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.slot == nil {
		a.slot = make(map[int64]int)
	}
	i, ok := a.slot[tc.Index]
	if ok && tc.ID != "" && a.calls[i].ID != "" && a.calls[i].ID != tc.ID {
		ok = false
	}
	if !ok {
		a.calls = append(a.calls, agent.ToolCall{})
		i = len(a.calls) - 1
		a.slot[tc.Index] = i
	}
	c := &a.calls[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Function.Name != "" {
		c.Name = tc.Function.Name
	}
	c.Arguments += tc.Function.Arguments
}

func (a *accumulator) delivered() bool {
	return a.text.Len() > 0 || a.reasoning.Len() > 0 || len(a.calls) > 0
}

func (a *accumulator) response() agent.Response {
	calls := a.calls
	for i := range calls {
		// A tool result must name its call; a few local servers omit ids.
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", i)
		}
	}
	return agent.Response{
		Message: agent.Message{
			Role:             agent.RoleAssistant,
			Content:          a.text.String(),
			ReasoningContent: a.reasoning.String(),
			ToolCalls:        calls,
		},
		FinishReason: mapFinish(a.finish, len(calls) > 0),
	}
}

// mapFinish maps finish_reason. Unknown reasons (content_filter,
// function_call, "eos" from some local servers) become stop, except that a
// response carrying tool calls is a tool-call turn whatever the server says:
// the calls must be answered before the model can go on. Conversely
// "tool_calls" with no call is a stop, so the turn loop cannot spin on an
// empty dispatch.
func mapFinish(reason string, hasCalls bool) agent.FinishReason {
	switch {
	case reason == "length":
		return agent.FinishLength
	case hasCalls:
		return agent.FinishToolCalls
	default:
		return agent.FinishStop
	}
}

func reasoningOf(d openaisdk.ChatCompletionChunkChoiceDelta) string {
	for _, name := range reasoningFields {
		f, ok := d.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
