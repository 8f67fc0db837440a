package agent

import (
	"context"
	"encoding/json"
	"errors"
)

// Role of a message in the model conversation.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to the model. It mirrors the
// OpenAI chat-completions message shape so providers translate it 1:1.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is the model's reasoning (DeepSeek's
	// reasoning_content) on an assistant message. Providers decide whether to
	// send it back, following their API's rules.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ReasoningField is the field the endpoint sent the reasoning in
	// ("reasoning_content" or "reasoning"; empty when it sent none): an
	// endpoint that is not DeepSeek's gets back only a field it sent.
	ReasoningField string `json:"reasoning_field,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool-role message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Images are a user message's images, sent after its text to a model
	// that reads images, or those a tool call returned (a tool message;
	// providers whose API takes no images there send them in a user
	// message after the call results).
	Images []Image `json:"images,omitempty"`
}

// Image is an image of a user message.
type Image struct {
	// MimeType is the image's type ("image/png").
	MimeType string `json:"mime_type"`
	// Data is the image, base64 (standard encoding).
	Data string `json:"data"`
	// Name is what the user knows it by (its URI, or "image N").
	Name string `json:"name,omitempty"`
}

// ImageNote is what a model that does not read images is told in place of
// one.
const ImageNote = "[image omitted: this model does not read images]"

// ErrImageRefused marks a request the endpoint refused because of an image
// it carried (too large, a type it does not read). Errors wrapping it also
// wrap ErrProvider.
var ErrImageRefused = errors.New("the endpoint refused an image")

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the raw JSON arguments text exactly as the model produced
	// it (it may be malformed; the tool reports that).
	Arguments string `json:"arguments"`
}

// ToolSpec is a tool as offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model request.
type Request struct {
	// Model overrides the provider's configured model for this request;
	// empty means the provider's own.
	Model    string     `json:"model,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// Thinking is the thought level asked for (ThinkingOff, ThinkingHigh,
	// ThinkingMax); empty sends no thinking field at all, which is what an
	// endpoint that did not ask for one gets.
	Thinking string `json:"thinking,omitempty"`
}

// Thought levels (the thought_level config option's values).
const (
	ThinkingOff  = "off"
	ThinkingHigh = "high"
	ThinkingMax  = "max"
)

// ThinkingLevels are the thought levels in the order a picker shows them.
var ThinkingLevels = []string{ThinkingOff, ThinkingHigh, ThinkingMax}

// FinishReason says why the model stopped.
type FinishReason string

const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool_calls"
	FinishLength    FinishReason = "length"
	// FinishContentFilter: the endpoint's filter stopped the answer (the
	// model refused); the turn ends with StopRefusal.
	FinishContentFilter FinishReason = "content_filter"
)

// Delta is a piece of streamed output.
type Delta struct {
	// Text is visible answer text.
	Text string
	// Reasoning is thinking text (shown to the user as a thought).
	Reasoning string
}

// Response is the whole assistant answer once the stream ended.
type Response struct {
	// Message is the assistant message (content, reasoning, tool calls) to
	// append to the history.
	Message      Message
	FinishReason FinishReason
	// Usage is what the request cost in tokens, as the endpoint counted it.
	Usage Usage
}

// Usage is the token count of one model request. All counts are tokens;
// when Reported is false the endpoint sent no usage and every count is 0
// (a caller that needs a figure estimates one).
type Usage struct {
	// PromptTokens is the size of the request: history, tools and system
	// prompt.
	PromptTokens int
	// CompletionTokens is the size of the answer, reasoning included.
	CompletionTokens int
	// TotalTokens is what the endpoint reports as the total (normally
	// prompt + completion).
	TotalTokens int
	// CachedTokens is the part of PromptTokens the endpoint served from its
	// prompt cache (DeepSeek's prompt_cache_hit_tokens, OpenAI's
	// prompt_tokens_details.cached_tokens).
	CachedTokens int
	// Cost is what the endpoint says the request cost, in USD (OpenRouter's
	// usage.cost); nil when it did not say.
	Cost *float64
	// Reported says the endpoint sent these counts.
	Reported bool
}

// Provider streams one model response. It calls emit for each text or
// reasoning delta as it arrives (from the calling goroutine), then returns the
// accumulated response. When ctx is cancelled it returns promptly with an
// error wrapping ctx.Err().
type Provider interface {
	Stream(ctx context.Context, req Request, emit func(Delta)) (Response, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, req Request, emit func(Delta)) (Response, error)

func (f ProviderFunc) Stream(ctx context.Context, req Request, emit func(Delta)) (Response, error) {
	return f(ctx, req, emit)
}

// ErrProvider marks a model/API failure. Its message is written for a user
// (what went wrong and what to do) and never contains the API key.
var ErrProvider = errors.New("model request failed")

// ErrAuthRequired marks a request that needs a key the user has not given
// (or one the endpoint refused). Errors wrapping it also wrap ErrProvider;
// the protocol layer answers ACP's auth_required, so the editor offers its
// sign-in.
var ErrAuthRequired = errors.New("authentication required")

// ErrContextExceeded marks a request the endpoint refused because the
// conversation no longer fits the model's context window. Errors wrapping it
// also wrap ErrProvider; a caller can compact the history and retry once.
var ErrContextExceeded = errors.New("the conversation exceeds the model's context window")
