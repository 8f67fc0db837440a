package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, func(mode string) int {
		if mode == "imagemem" {
			return imageMemChild()
		}
		return 2
	})
}

const testKey = "sk-test-SECRET-0123456789abcdef"

// received is one request as the fake server saw it.
type received struct {
	Path string
	Auth string
	Body map[string]any
}

// fakeAPI is an OpenAI-compatible endpoint on 127.0.0.1. respond is called
// with the 0-based request number and writes whatever that request gets.
type fakeAPI struct {
	srv     *httptest.Server
	respond func(w http.ResponseWriter, r *http.Request, n int)

	// mu guards reqs.
	mu   sync.Mutex
	reqs []received
}

func newFakeAPI(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := received{Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
		if err := json.Unmarshal(raw, &rec.Body); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, rec)
		f.mu.Unlock()
		f.respond(w, r, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

func (f *fakeAPI) provider(t *testing.T, mod func(*openai.Options)) *openai.Provider {
	t.Helper()
	opts := openai.Options{
		BaseURL:      f.srv.URL + "/v1",
		Model:        "test-model",
		APIKey:       testKey,
		HTTPClient:   f.srv.Client(),
		RetryBackoff: func(int) time.Duration { return 0 },
		Logger:       zap.NewNop(),
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := openai.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// sse writes the events as a real endpoint does: headers first, then one
// "data:" event per chunk, flushed one by one.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	more(w, events...)
}

// more writes further events of a stream sse started.
func more(w http.ResponseWriter, events ...string) {
	for _, e := range events {
		if strings.HasPrefix(e, ":") {
			fmt.Fprintf(w, "%s\n\n", e) // SSE comment, e.g. DeepSeek's keep-alive
		} else {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		w.(http.Flusher).Flush()
	}
}

const done = "[DONE]"

// chunk is a chat.completion.chunk with one choice; delta is raw JSON and
// finish is the finish_reason ("" for null).
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model",`+
		`"choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`, delta, fr)
}

func text(s string) string { return chunk(fmt.Sprintf(`{"content":%q}`, s), "") }
func reasoning(s string) string {
	return chunk(fmt.Sprintf(`{"content":null,"reasoning_content":%q}`, s), "")
}
func finish(reason string) string {
	return chunk(`{}`, reason)
}

// toolDelta is one tool-call fragment; id and name are left out when empty,
// as the real API does after a call's first fragment.
func toolDelta(index int, id, name, args string) string {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
	}
	if name != "" {
		tc["function"].(map[string]any)["name"] = name
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{tc}})
	return chunk(string(b), "")
}

func simpleRequest() agent.Request {
	return agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "be brief"},
		{Role: agent.RoleUser, Content: "hi"},
	}}
}

func TestStreamAccumulates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		events     []string
		wantDeltas []agent.Delta
		want       agent.Response
	}{
		{
			name:       "text deltas and stop",
			events:     []string{chunk(`{"role":"assistant","content":""}`, ""), text("Hel"), text("lo"), finish("stop"), done},
			wantDeltas: []agent.Delta{{Text: "Hel"}, {Text: "lo"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "Hello"}, FinishReason: agent.FinishStop},
		},
		{
			name:       "keep-alive comments are ignored",
			events:     []string{": keep-alive", text("a"), ": keep-alive", finish("stop"), done},
			wantDeltas: []agent.Delta{{Text: "a"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "a"}, FinishReason: agent.FinishStop},
		},
		{
			name: "tool call split across chunks",
			events: []string{
				reasoning("need ls"),
				toolDelta(0, "call_a", "bash", ""),
				toolDelta(0, "", "", `{"com`),
				toolDelta(0, "", "", `mand":`),
				toolDelta(0, "", "", `"ls -la"}`),
				finish("tool_calls"), done,
			},
			wantDeltas: []agent.Delta{{Reasoning: "need ls"}},
			want: agent.Response{
				Message: agent.Message{
					Role: agent.RoleAssistant, ReasoningContent: "need ls", ReasoningField: "reasoning_content",
					ToolCalls: []agent.ToolCall{{ID: "call_a", Name: "bash", Arguments: `{"command":"ls -la"}`}},
				},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name: "several tool calls in one response, fragments interleaved by index",
			events: []string{
				text("Running two."),
				toolDelta(0, "call_a", "bash", `{"command":`),
				toolDelta(1, "call_b", "bash_output", `{"task_id":`),
				toolDelta(0, "", "", `"make"}`),
				toolDelta(1, "", "", `"bash-1"}`),
				toolDelta(2, "call_c", "bash_kill", `{"task_id":"bash-2"}`),
				finish("tool_calls"), done,
			},
			wantDeltas: []agent.Delta{{Text: "Running two."}},
			want: agent.Response{
				Message: agent.Message{
					Role: agent.RoleAssistant, Content: "Running two.",
					ToolCalls: []agent.ToolCall{
						{ID: "call_a", Name: "bash", Arguments: `{"command":"make"}`},
						{ID: "call_b", Name: "bash_output", Arguments: `{"task_id":"bash-1"}`},
						{ID: "call_c", Name: "bash_kill", Arguments: `{"task_id":"bash-2"}`},
					},
				},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name: "calls all numbered 0 are told apart by id",
			events: []string{
				toolDelta(0, "call_a", "bash", `{}`),
				toolDelta(0, "call_b", "bash", `{"x":1}`),
				finish("tool_calls"), done,
			},
			want: agent.Response{
				Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
					{ID: "call_a", Name: "bash", Arguments: `{}`},
					{ID: "call_b", Name: "bash", Arguments: `{"x":1}`},
				}},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name:   "a call without id gets one",
			events: []string{toolDelta(0, "", "bash", `{}`), finish("tool_calls"), done},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_0", Name: "bash", Arguments: `{}`}}},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name:       "reasoning_content streamed as reasoning deltas",
			events:     []string{reasoning("Let me "), reasoning("think."), text("42"), finish("stop"), done},
			wantDeltas: []agent.Delta{{Reasoning: "Let me "}, {Reasoning: "think."}, {Text: "42"}},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "42", ReasoningContent: "Let me think.", ReasoningField: "reasoning_content"},
				FinishReason: agent.FinishStop,
			},
		},
		{
			name:       "reasoning field as Ollama and vLLM send it",
			events:     []string{chunk(`{"reasoning":"hmm"}`, ""), text("ok"), finish("stop"), done},
			wantDeltas: []agent.Delta{{Reasoning: "hmm"}, {Text: "ok"}},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "ok", ReasoningContent: "hmm", ReasoningField: "reasoning"},
				FinishReason: agent.FinishStop,
			},
		},
		{
			name:       "finish length",
			events:     []string{text("trunc"), finish("length"), done},
			wantDeltas: []agent.Delta{{Text: "trunc"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "trunc"}, FinishReason: agent.FinishLength},
		},
		{
			name:       "unknown finish reason is stop",
			events:     []string{text("x"), finish("eos"), done},
			wantDeltas: []agent.Delta{{Text: "x"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "x"}, FinishReason: agent.FinishStop},
		},
		{
			name:       "content_filter is a refusal",
			events:     []string{text("x"), finish("content_filter"), done},
			wantDeltas: []agent.Delta{{Text: "x"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "x"}, FinishReason: agent.FinishContentFilter},
		},
		{
			name:   "stop with tool calls is tool_calls",
			events: []string{toolDelta(0, "call_a", "bash", `{}`), finish("stop"), done},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_a", Name: "bash", Arguments: `{}`}}},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name: "usage arrives as a last chunk without choices",
			events: []string{
				text("hi"), finish("stop"),
				`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model","choices":[],` +
					`"usage":{"prompt_tokens":1200,"completion_tokens":34,"total_tokens":1234,"prompt_tokens_details":{"cached_tokens":1024}}}`,
				done,
			},
			wantDeltas: []agent.Delta{{Text: "hi"}},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "hi"},
				FinishReason: agent.FinishStop,
				Usage:        agent.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234, CachedTokens: 1024, Reported: true},
			},
		},
		{
			name: "usage on the finishing chunk, null before",
			events: []string{
				`{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}`,
				`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`,
				done,
			},
			wantDeltas: []agent.Delta{{Text: "a"}},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "a"},
				FinishReason: agent.FinishStop,
				Usage:        agent.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8, Reported: true},
			},
		},
		{
			name:       "finish_reason without [DONE] is complete",
			events:     []string{text("x"), finish("stop")},
			wantDeltas: []agent.Delta{{Text: "x"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "x"}, FinishReason: agent.FinishStop},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, tt.events...) })
			var deltas []agent.Delta
			got, err := api.provider(t, nil).Stream(testutil.Context(t), simpleRequest(), func(d agent.Delta) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, text("ok"), finish("stop"), done) })
	schema := `{"type":"object","properties":{"command":{"type":"string","description":"shell"}},"required":["command"]}`
	req := agent.Request{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "sys"},
			{Role: agent.RoleUser, Content: "list files"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}}},
			{Role: agent.RoleTool, ToolCallID: "call_1", Content: "a.txt"},
		},
		Tools: []agent.ToolSpec{{Name: "bash", Description: "run a command", Parameters: json.RawMessage(schema)}},
	}
	if _, err := api.provider(t, nil).Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", got.Path)
	}
	if got.Auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got.Auth)
	}
	var wantSchema any
	if err := json.Unmarshal([]byte(schema), &wantSchema); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model":          "test-model",
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"messages": []any{
			map[string]any{"role": "system", "content": "sys"},
			map[string]any{"role": "user", "content": "list files"},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`},
			}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
		},
		"tools": []any{map[string]any{
			"type": "function",
			"function": map[string]any{
				"name": "bash", "description": "run a command", "parameters": wantSchema,
			},
		}},
	}
	if diff := cmp.Diff(want, got.Body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

// TestEmptyAnswerNotSent: an assistant message with neither text nor tool
// calls (a reasoning-only answer) is left out of later requests: go-openai
// cannot send an empty content, and servers refuse an assistant message
// without content or tool calls.
func TestEmptyAnswerNotSent(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, text("ok"), finish("stop"), done) })
	req := agent.Request{Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "hi"},
		{Role: agent.RoleAssistant, ReasoningContent: "nothing to say"},
		{Role: agent.RoleUser, Content: "hello?"},
	}}
	if _, err := api.provider(t, nil).Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "user", "content": "hello?"},
	}
	if diff := cmp.Diff(want, api.requests()[0].Body["messages"]); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}
}

func TestBaseURLVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		suffix   string
		wantPath string
	}{
		{name: "host only gets /v1", suffix: "", wantPath: "/v1/chat/completions"},
		{name: "host with slash gets /v1", suffix: "/", wantPath: "/v1/chat/completions"},
		{name: "v1 as Ollama documents it", suffix: "/v1", wantPath: "/v1/chat/completions"},
		{name: "trailing slash", suffix: "/v1/", wantPath: "/v1/chat/completions"},
		{name: "proxy prefix", suffix: "/proxy/openai/v1", wantPath: "/proxy/openai/v1/chat/completions"},
		{name: "full endpoint pasted", suffix: "/v1/chat/completions", wantPath: "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, finish("stop"), done) })
			p := api.provider(t, func(o *openai.Options) { o.BaseURL = api.srv.URL + tt.suffix })
			if _, err := p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {}); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if got := api.requests()[0].Path; got != tt.wantPath {
				t.Errorf("path = %q, want %q", got, tt.wantPath)
			}
		})
	}
}

// TestReasoningRoundTrip runs a two-step tool loop and a follow-up prompt
// the way the turn loop will, and checks which assistant messages carry
// reasoning_content in what the server received.
func TestReasoningRoundTrip(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		switch n {
		case 0:
			sse(w, reasoning("I should list."), toolDelta(0, "call_1", "bash", `{"command":"ls"}`), finish("tool_calls"), done)
		default:
			sse(w, reasoning(fmt.Sprintf("thought %d", n)), text(fmt.Sprintf("answer %d", n)), finish("stop"), done)
		}
	})
	p := api.provider(t, nil)
	ctx := testutil.Context(t)
	history := []agent.Message{{Role: agent.RoleUser, Content: "what is here?"}}
	step := func() {
		t.Helper()
		resp, err := p.Stream(ctx, agent.Request{Messages: history}, func(agent.Delta) {})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		history = append(history, resp.Message)
	}
	step() // tool call
	history = append(history, agent.Message{Role: agent.RoleTool, ToolCallID: "call_1", Content: "a.txt"})
	step() // answer inside the same user turn
	history = append(history, agent.Message{Role: agent.RoleUser, Content: "and now?"})
	step() // answer to a new prompt, no tools
	history = append(history, agent.Message{Role: agent.RoleUser, Content: "thanks"})
	step()

	reasoningSent := func(body map[string]any) []any {
		var out []any
		for _, m := range body["messages"].([]any) {
			m := m.(map[string]any)
			if m["role"] == "assistant" {
				out = append(out, m["reasoning_content"])
			}
		}
		return out
	}
	reqs := api.requests()
	want := [][]any{
		nil, // first request: no assistant message yet
		// Inside the tool loop the reasoning goes back.
		{"I should list."},
		// After a new user message, a turn that used tools keeps its
		// reasoning (DeepSeek answers 400 otherwise)...
		{"I should list.", "thought 1"},
		// ...and a turn without tools loses it.
		{"I should list.", "thought 1", nil},
	}
	for i, w := range want {
		if diff := cmp.Diff(w, reasoningSent(reqs[i].Body)); diff != "" {
			t.Errorf("request %d reasoning_content per assistant message (-want +got):\n%s", i, diff)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	errBody := func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":null}}`, msg)
	}
	tests := []struct {
		name         string
		respond      func(w http.ResponseWriter, r *http.Request, n int)
		opts         func(*openai.Options)
		wantSub      []string
		wantRequests int
		wantOK       bool
		wantDeltas   int
	}{
		{
			name: "401 names the endpoint, never the key the server echoed",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				errBody(w, http.StatusUnauthorized, "Incorrect API key provided: "+testKey)
			},
			wantSub:      []string{"rejected the API key (401)", "/v1"},
			wantRequests: 1,
		},
		{
			name: "401 without a key on a local endpoint asks for one",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				errBody(w, http.StatusUnauthorized, "auth required")
			},
			opts:         func(o *openai.Options) { o.APIKey = "" },
			wantSub:      []string{"no API key", "DSH_API_KEY"},
			wantRequests: 1,
		},
		{
			name: "429 then success honours Retry-After",
			respond: func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 0 {
					w.Header().Set("Retry-After", "0")
					errBody(w, http.StatusTooManyRequests, "slow down")
					return
				}
				sse(w, text("ok"), finish("stop"), done)
			},
			// A backoff that would stall the test proves Retry-After won.
			opts:         func(o *openai.Options) { o.RetryBackoff = func(int) time.Duration { return time.Hour } },
			wantOK:       true,
			wantRequests: 2,
			wantDeltas:   1,
		},
		{
			name: "429 every time",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Retry-After", "0")
				errBody(w, http.StatusTooManyRequests, "slow down")
			},
			wantSub:      []string{"rate limited by", "after 3 retries", "slow down"},
			wantRequests: 4,
		},
		{
			name: "429 asking for a long wait is not retried",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Retry-After", "3600")
				errBody(w, http.StatusTooManyRequests, "quota")
			},
			wantSub:      []string{"rate limited by", "quota"},
			wantRequests: 1,
		},
		{
			name: "503 then success",
			respond: func(w http.ResponseWriter, _ *http.Request, n int) {
				if n < 2 {
					errBody(w, http.StatusServiceUnavailable, "busy")
					return
				}
				sse(w, text("ok"), finish("stop"), done)
			},
			wantOK:       true,
			wantRequests: 3,
			wantDeltas:   1,
		},
		{
			name: "400 carries status and server message, no retry",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				errBody(w, http.StatusBadRequest, "messages[2]: bad role")
			},
			wantSub:      []string{"400 Bad Request", "messages[2]: bad role"},
			wantRequests: 1,
		},
		{
			name: "502 with an HTML body from a proxy is retried, then reported",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprint(w, "<html><body>bad gateway</body></html>")
			},
			wantSub:      []string{"502 Bad Gateway", "after 3 retries", "bad gateway"},
			wantRequests: 4,
		},
		{
			name:         "404 hints at the base URL",
			respond:      func(w http.ResponseWriter, _ *http.Request, _ int) { errBody(w, http.StatusNotFound, "no such route") },
			wantSub:      []string{"404 Not Found", "--base-url", `"test-model"`},
			wantRequests: 1,
		},
		{
			name: "connection dropped mid-answer",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				sse(w, text("partial "), text("answer"))
				panic(http.ErrAbortHandler) // closes the connection without ending the chunked body
			},
			wantSub:      []string{"ended early", "incomplete"},
			wantRequests: 1,
			wantDeltas:   2,
		},
		{
			name:         "stream closed cleanly before finish_reason",
			respond:      func(w http.ResponseWriter, _ *http.Request, _ int) { sse(w, text("partial")) },
			wantSub:      []string{"ended early"},
			wantRequests: 1,
			wantDeltas:   1,
		},
		{
			name: "dropped before any output is retried",
			respond: func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 0 {
					sse(w, chunk(`{"role":"assistant"}`, ""))
					panic(http.ErrAbortHandler)
				}
				sse(w, text("ok"), finish("stop"), done)
			},
			wantOK:       true,
			wantRequests: 2,
			wantDeltas:   1,
		},
		{
			name: "an undecodable chunk",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				sse(w, text("a"), `{"choices":"nope"}`)
			},
			wantSub:      []string{"could not read"},
			wantRequests: 1,
			wantDeltas:   1,
		},
		{
			name: "error event mid-stream",
			respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				sse(w, text("a"), `{"error":{"message":"overloaded"}}`)
			},
			wantSub:      []string{"reported an error mid-answer: overloaded"},
			wantRequests: 1,
			wantDeltas:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, tt.respond)
			core, logs := observer.New(zapcore.DebugLevel)
			p := api.provider(t, func(o *openai.Options) {
				o.Logger = zap.New(core)
				if tt.opts != nil {
					tt.opts(o)
				}
			})
			deltas := 0
			_, err := p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) { deltas++ })
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("Stream succeeded, want an error")
				}
				if !errors.Is(err, agent.ErrProvider) {
					t.Errorf("error %q does not wrap agent.ErrProvider", err)
				}
				for _, s := range tt.wantSub {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if !strings.Contains(err.Error(), api.srv.URL) {
					t.Errorf("error %q does not name the endpoint %s", err, api.srv.URL)
				}
				assertNoKey(t, "error", err.Error())
			}
			if got := len(api.requests()); got != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", got, tt.wantRequests)
			}
			if deltas != tt.wantDeltas {
				t.Errorf("emitted %d deltas, want %d", deltas, tt.wantDeltas)
			}
			for _, e := range logs.All() {
				assertNoKey(t, "log message", e.Message)
				for k, v := range e.ContextMap() {
					assertNoKey(t, "log field "+k, fmt.Sprint(v))
				}
			}
		})
	}
}

func assertNoKey(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
		t.Errorf("%s contains the API key: %q", what, s)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := openai.New(openai.Options{
		BaseURL:      "http://" + addr + "/v1",
		APIKey:       testKey,
		RetryBackoff: func(int) time.Duration { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {})
	if err == nil {
		t.Fatal("Stream succeeded against a closed port")
	}
	if !errors.Is(err, agent.ErrProvider) {
		t.Errorf("error %q does not wrap agent.ErrProvider", err)
	}
	t.Log(err)
	for _, s := range []string{"cannot reach", "http://" + addr + "/v1", "after 3 retries"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	assertNoKey(t, "error", err.Error())
}

func TestNoAPIKey(t *testing.T) {
	t.Parallel()
	p, err := openai.New(openai.Options{}) // DeepSeek by default; no network is touched
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); !errors.Is(err, openai.ErrNoAPIKey) {
		t.Errorf("Check() = %v, want ErrNoAPIKey", err)
	}
	_, err = p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {})
	if !errors.Is(err, openai.ErrNoAPIKey) || !errors.Is(err, agent.ErrProvider) {
		t.Fatalf("Stream error = %v, want ErrNoAPIKey wrapping agent.ErrProvider", err)
	}
	for _, s := range []string{"no API key", "DSH_API_KEY", "DEEPSEEK_API_KEY", "https://api.deepseek.com/v1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	local, err := openai.New(openai.Options{BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Check(); err != nil {
		t.Errorf("a local endpoint needs no key, Check() = %v", err)
	}
}

func TestBadBaseURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"api.deepseek.com", "ftp://x/v1", "http://"} {
		if _, err := openai.New(openai.Options{BaseURL: u}); err == nil {
			t.Errorf("New(BaseURL %q) succeeded, want an error", u)
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sse(w, text("first"))
		// Hold the stream open as a slow model would, until the client goes.
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	p := api.provider(t, nil)
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	start := time.Now()
	_, err := p.Stream(ctx, simpleRequest(), func(d agent.Delta) {
		if d.Text == "first" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream error = %v, want context.Canceled", err)
	}
	if errors.Is(err, agent.ErrProvider) {
		t.Errorf("a cancel is not a provider failure: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stream took %v to notice the cancel", d)
	}
	if got := len(api.requests()); got != 1 {
		t.Errorf("server got %d requests, want 1 (no retry after a cancel)", got)
	}
}

// TestContextExceeded: the wordings of DeepSeek, OpenAI, vLLM and llama.cpp
// for a request longer than the context window are told apart from other
// 400s, and none is retried.
func TestContextExceeded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want bool
	}{
		{
			name: "DeepSeek",
			body: `{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 131134 tokens ` +
				`(122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",` +
				`"type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`,
			want: true,
		},
		{
			name: "OpenAI",
			body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 8213 tokens ` +
				`(6683 in the messages, 730 in the functions, and 800 in the completion). Please reduce the length of the messages, functions, or completion.",` +
				`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: true,
		},
		{
			name: "OpenAI, newer wording",
			body: `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.",` +
				`"type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
			want: true,
		},
		{
			name: "vLLM",
			body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, ` +
				`Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}`,
			want: true,
		},
		{
			name: "llama.cpp",
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error",` +
				`"n_prompt_tokens":5000,"n_ctx":4096}}`,
			want: true,
		},
		{
			name: "another 400",
			body: `{"error":{"message":"Missing reasoning_content field in the assistant message at message index 2","type":"invalid_request_error","code":"invalid_request_error"}}`,
			want: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, tt.body)
			})
			_, err := api.provider(t, nil).Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {})
			if err == nil {
				t.Fatal("Stream succeeded, want an error")
			}
			if !errors.Is(err, agent.ErrProvider) {
				t.Errorf("error %q does not wrap agent.ErrProvider", err)
			}
			if got := errors.Is(err, agent.ErrContextExceeded); got != tt.want {
				t.Errorf("errors.Is(%q, ErrContextExceeded) = %v, want %v", err, got, tt.want)
			}
			t.Log(err)
			if tt.want && !strings.Contains(err.Error(), "context window") {
				t.Errorf("error %q does not say what happened", err)
			}
			for _, s := range []string{api.srv.URL, "400 Bad Request"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if got := len(api.requests()); got != 1 {
				t.Errorf("server got %d requests, want 1", got)
			}
		})
	}
}

// TestStall: an endpoint that accepts the request and then sends nothing —
// before its headers, after its headers, or in the middle of the stream —
// fails after the idle timeout with a message naming it, and is not retried.
func TestStall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		before     func(w http.ResponseWriter)
		wantSub    string
		wantDeltas int
	}{
		{name: "no response at all", before: func(http.ResponseWriter) {}, wantSub: "sent no answer for 200ms"},
		{
			name: "headers, then nothing",
			before: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
			},
			wantSub: "sent no answer for 200ms",
		},
		{
			name:       "silent in the middle of the answer",
			before:     func(w http.ResponseWriter) { sse(w, text("partial")) },
			wantSub:    "sent nothing for 200ms in the middle of its answer",
			wantDeltas: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				tt.before(w)
				// Hung: until the client gives up (or the test ends).
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			p := api.provider(t, func(o *openai.Options) { o.IdleTimeout = 200 * time.Millisecond })
			deltas := 0
			_, err := p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) { deltas++ })
			if err == nil {
				t.Fatal("Stream succeeded against a silent endpoint")
			}
			t.Log(err)
			if !errors.Is(err, agent.ErrProvider) {
				t.Errorf("error %q does not wrap agent.ErrProvider", err)
			}
			for _, s := range []string{api.srv.URL + "/v1", tt.wantSub, "--model-timeout"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if deltas != tt.wantDeltas {
				t.Errorf("emitted %d deltas, want %d", deltas, tt.wantDeltas)
			}
			if got := len(api.requests()); got != 1 {
				t.Errorf("server got %d requests, want 1 (a stall is not retried)", got)
			}
		})
	}
}

// TestSlowButAlive: a stream whose chunks come further apart in total than
// the idle timeout, but each well within it, completes: the timeout is about
// silence, not about the length of the answer. Time is what is under test,
// so the server paces its chunks with a timer.
func TestSlowButAlive(t *testing.T) {
	t.Parallel()
	const (
		idle   = 400 * time.Millisecond
		gap    = idle / 4
		chunks = 6
	)
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sse(w, text("0"))
		for i := 1; i < chunks; i++ {
			timer := time.NewTimer(gap)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				timer.Stop()
				return
			}
			more(w, text(fmt.Sprint(i)))
		}
		more(w, finish("stop"), done)
	})
	p := api.provider(t, func(o *openai.Options) { o.IdleTimeout = idle })
	start := time.Now()
	resp, err := p.Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Message.Content != "012345" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	if d := time.Since(start); d <= idle {
		t.Errorf("the stream took %v, not more than one timeout: the test proves nothing", d)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	t.Run("lists ids", func(t *testing.T) {
		t.Parallel()
		var auth, path string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth, path = r.Header.Get("Authorization"), r.URL.Path
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"deepseek-chat","object":"model","owned_by":"deepseek"},`+
				`{"id":"deepseek-reasoner","object":"model","owned_by":"deepseek"}]}`)
		}))
		t.Cleanup(srv.Close)
		p := newProvider(t, srv)
		got, err := p.Models(testutil.Context(t))
		if err != nil {
			t.Fatalf("Models: %v", err)
		}
		if diff := cmp.Diff([]string{"deepseek-chat", "deepseek-reasoner"}, got); diff != "" {
			t.Errorf("models (-want +got):\n%s", diff)
		}
		if path != "/v1/models" || auth != "Bearer "+testKey {
			t.Errorf("request: path %q, Authorization %q", path, auth)
		}
	})
	t.Run("no such route", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		_, err := newProvider(t, srv).Models(testutil.Context(t))
		if err == nil {
			t.Fatal("Models succeeded on a 404")
		}
		for _, s := range []string{srv.URL, "404"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q lacks %q", err, s)
			}
		}
	})
	t.Run("key echoed in a 401 is not repeated", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, testKey)
		}))
		t.Cleanup(srv.Close)
		_, err := newProvider(t, srv).Models(testutil.Context(t))
		if err == nil {
			t.Fatal("Models succeeded on a 401")
		}
		assertNoKey(t, "error", err.Error())
	})
	t.Run("a hung endpoint is given up on with the caller's context", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(testutil.Context(t), 100*time.Millisecond)
		defer cancel()
		_, err := newProvider(t, srv).Models(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Models error = %v, want a deadline", err)
		}
		if !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("error %q does not name the endpoint", err)
		}
	})
}

func newProvider(t *testing.T, srv *httptest.Server) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: testKey, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
