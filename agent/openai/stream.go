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
	Usage *usage `json:"usage"`
}

// usage is a chunk's usage object with what each endpoint adds to
// OpenAI's: DeepSeek's cache counters, OpenRouter's cost.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// DeepSeek: hit + miss = prompt_tokens.
	PromptCacheHitTokens  *int `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens *int `json:"prompt_cache_miss_tokens"`
	// OpenAI, OpenRouter, vLLM.
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// OpenRouter: what the request cost, in USD.
	Cost *float64 `json:"cost"`
}

func (u *usage) agentUsage() agent.Usage {
	out := agent.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		Cost:             u.Cost,
		Reported:         true,
	}
	switch {
	case u.PromptCacheHitTokens != nil:
		out.CachedTokens = *u.PromptCacheHitTokens
	case u.PromptTokensDetails != nil:
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// MaxAnswerBytes bounds one answer: its text, reasoning and tool arguments
// together. An endpoint that sends more (a runaway model, a broken proxy)
// fails the request rather than taking the agent's memory, the editor, the
// store and every later request with it.
const MaxAnswerBytes = 8 << 20

// tooLargeError is an answer past MaxAnswerBytes.
type tooLargeError struct{ limit int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the answer exceeds %d MiB", e.limit>>20)
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
	// field is the name the reasoning came in: reasoning_content or
	// reasoning.
	field string
	// size is the bytes of text, reasoning and arguments so far.
	size int
}

func (a *accumulator) add(raw []byte, emit func(agent.Delta)) error {
	var c chunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return &decodeError{cause: err}
	}
	if c.Usage != nil {
		a.usage = c.Usage.agentUsage()
	}
	for _, choice := range c.Choices {
		// We never ask for n > 1; anything beyond the first choice is not ours.
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		r, field := d.ReasoningContent, "reasoning_content"
		if r == "" {
			r, field = d.Reasoning, "reasoning"
		}
		a.size += len(r) + len(d.Content)
		for _, tc := range d.ToolCalls {
			a.size += len(tc.Function.Arguments) + len(tc.Function.Name) + len(tc.ID)
		}
		if a.size > MaxAnswerBytes {
			return &tooLargeError{limit: MaxAnswerBytes}
		}
		if r != "" {
			if a.field == "" {
				a.field = field
			}
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

// callsComplete reports whether the answer so far ends in whole tool
// calls: each named, its arguments a JSON value (or none). A stream that
// ends there without a finish_reason (vLLM, some proxies) is a tool-call
// answer; one cut inside a call is not.
func (a *accumulator) callsComplete() bool {
	if len(a.calls) == 0 {
		return false
	}
	for _, c := range a.calls {
		args := strings.TrimSpace(c.Arguments)
		if c.Name == "" || (args != "" && !json.Valid([]byte(args))) {
			return false
		}
	}
	return true
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
			ReasoningField:   a.field,
			ToolCalls:        calls,
		},
		FinishReason: mapFinish(a.finish, len(calls) > 0),
		Usage:        a.usage,
	}
}

// mapFinish maps finish_reason. content_filter is a refusal; unknown reasons
// (function_call, "eos" from some local servers) become stop, except that a
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
	case reason == "content_filter":
		return agent.FinishContentFilter
	default:
		return agent.FinishStop
	}
}
