package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/dsh-acp/dsh-acp/agent"
)

// chunk is one chat.completion.chunk, decoded here rather than into
// go-openai's ChatCompletionStreamResponse: thinking text comes as
// reasoning_content (DeepSeek, SGLang, older vLLM) or as reasoning (Ollama,
// newer vLLM, OpenRouter), and go-openai's delta has only the first.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string              `json:"content"`
			ReasoningContent string              `json:"reasoning_content"`
			Reasoning        string              `json:"reasoning"`
			ToolCalls        []goopenai.ToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	// Usage is null on every chunk but the last when usage was asked for.
	Usage *goopenai.Usage `json:"usage"`
}

// decodeError is a chunk that is not the JSON we expect.
type decodeError struct{ cause error }

func (e *decodeError) Error() string { return "undecodable chunk: " + e.cause.Error() }
func (e *decodeError) Unwrap() error { return e.cause }

// accumulator folds the chunks of one streamed answer into a Response.
type accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []agent.ToolCall
	// slot maps a tool call's stream index to its position in calls.
	slot map[int]int
	// finish is the raw finish_reason; finished is set once one arrived.
	finish   string
	finished bool
	usage    agent.Usage
}

func (a *accumulator) add(raw []byte, emit func(agent.Delta)) error {
	var c chunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return &decodeError{cause: err}
	}
	if c.Usage != nil {
		a.usage = agent.Usage{
			PromptTokens:     c.Usage.PromptTokens,
			CompletionTokens: c.Usage.CompletionTokens,
			TotalTokens:      c.Usage.TotalTokens,
			Reported:         true,
		}
	}
	for _, choice := range c.Choices {
		// We never ask for n > 1; anything beyond the first choice is not ours.
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		r := d.ReasoningContent
		if r == "" {
			r = d.Reasoning
		}
		if r != "" {
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
	return nil
}

// addToolCall merges one tool-call fragment. The first fragment of a call
// carries its id and name, later ones only more of the arguments text, all
// under the same index. A fragment whose id differs from the one already at
// its index starts a new call: some servers number every call 0.
func (a *accumulator) addToolCall(tc goopenai.ToolCall) {
	if a.slot == nil {
		a.slot = make(map[int]int)
	}
	// Index is always sent in a chunk; a server that leaves it out numbers
	// calls as if every one were 0, and ids tell them apart.
	index := 0
	if tc.Index != nil {
		index = *tc.Index
	}
	i, ok := a.slot[index]
	if ok && tc.ID != "" && a.calls[i].ID != "" && a.calls[i].ID != tc.ID {
		ok = false
	}
	if !ok {
		a.calls = append(a.calls, agent.ToolCall{})
		i = len(a.calls) - 1
		a.slot[index] = i
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
		Usage:        a.usage,
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
