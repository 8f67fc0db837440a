package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// mockProvider is a provider for model at m.
func mockProvider(t *testing.T, m *mockllm.Server, model string, mod func(*openai.Options)) *openai.Provider {
	t.Helper()
	opts := openai.Options{BaseURL: m.URL, Model: model, APIKey: testKey, RetryBackoff: func(int) time.Duration { return 0 }}
	if mod != nil {
		mod(&opts)
	}
	p, err := openai.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultModelIsCurrent(t *testing.T) {
	t.Parallel()
	if openai.DefaultModel != "deepseek-flash" {
		t.Errorf("DefaultModel = %q, want deepseek-flash", openai.DefaultModel)
	}
	for model, want := range map[string]int{
		"deepseek-flash": 1_000_000, "deepseek-v4-flash": 1_000_000, "deepseek-v4-pro": 1_000_000,
		"deepseek/deepseek-v4-pro": 1_000_000, "deepseek-chat": agent.DefaultContextWindow,
	} {
		if got := agent.ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestModelNotServed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flavor mockllm.Flavor
		model  string
		want   []string
	}{
		{"deepseek retired id", mockllm.DeepSeek, "deepseek-chat",
			[]string{`model "deepseek-chat" is not served by`, "(it serves: deepseek-flash, deepseek-v4-pro, deepseek-v4-flash)", "retired", "use deepseek-flash"}},
		{"deepseek unknown id", mockllm.DeepSeek, "deepseek-v9", []string{`model "deepseek-v9" is not served by`, "it serves: deepseek-flash"}},
		{"openai-style 404 model_not_found", mockllm.OpenRouter, "nobody/nothing", []string{`model "nobody/nothing" is not served by`, "it serves: deepseek/deepseek-v4-flash, openai/gpt-5"}},
		{"ollama 404 not found", mockllm.Ollama, "llama9", []string{`model "llama9" is not served by`, "it serves: qwen3:8b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mockllm.New(t, mockllm.Options{Flavor: tt.flavor})
			_, err := mockProvider(t, m, tt.model, nil).Stream(testutil.Context(t), simpleRequest(), func(agent.Delta) {})
			if !errors.Is(err, openai.ErrModelNotServed) || !errors.Is(err, agent.ErrProvider) {
				t.Fatalf("err = %v, want ErrModelNotServed", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), m.URL) == false {
				t.Errorf("error %q does not name the endpoint %s", err, m.URL)
			}
		})
	}
}

// toolTurn is a history whose assistant message made a tool call with the
// given reasoning, answered, then a new user message.
func toolTurn(reasoning, field string) agent.Request {
	return agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "sys"},
		{Role: agent.RoleUser, Content: "list"},
		{Role: agent.RoleAssistant, ReasoningContent: reasoning, ReasoningField: field, ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}}},
		{Role: agent.RoleTool, ToolCallID: "call_1", Content: "a\nb"},
		{Role: agent.RoleAssistant, Content: "two files"},
		{Role: agent.RoleUser, Content: "thanks"},
	}}
}

func TestDeepSeekReasoningContentRule(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"deepseek-flash", "deepseek-v4-pro"} {
		for _, reasoning := range []string{"", "I should list."} {
			m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
			_, err := mockProvider(t, m, model, nil).Stream(testutil.Context(t), toolTurn(reasoning, "reasoning_content"), func(agent.Delta) {})
			if err != nil {
				t.Errorf("%s, reasoning %q: %v", model, reasoning, err)
			}
		}
	}
	// Behind a gateway's prefix DeepSeek's rule still applies.
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.OpenRouter})
	if _, err := mockProvider(t, m, "deepseek/deepseek-v4-flash", nil).Stream(testutil.Context(t), toolTurn("", ""), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	msgs := m.Requests()[0].Messages()
	if v, ok := msgs[2]["reasoning_content"]; !ok || v != "" {
		t.Errorf("deepseek/ model behind a gateway: assistant tool-call message = %v, want reasoning_content \"\"", msgs[2])
	}
}

func TestOtherEndpointsGetOnlyFieldsTheySent(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.Ollama})
	ctx := testutil.Context(t)
	p := mockProvider(t, m, "qwen3:8b", nil)
	if _, err := p.Stream(ctx, toolTurn("", ""), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(ctx, toolTurn("hmm", "reasoning"), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	first, second := reqs[0].Messages()[2], reqs[1].Messages()[2]
	if _, ok := first["reasoning_content"]; ok {
		t.Errorf("empty reasoning sent to a non-DeepSeek endpoint: %v", first)
	}
	if _, ok := second["reasoning_content"]; ok || second["reasoning"] != "hmm" {
		t.Errorf("reasoning that came as \"reasoning\" went back as %v, want reasoning only", second)
	}
	for _, r := range reqs {
		for _, k := range []string{"thinking", "reasoning_effort"} {
			if _, ok := r.Body[k]; ok {
				t.Errorf("request carries %q, which nobody asked for", k)
			}
		}
	}
}

func TestThinkingFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, level string
		want         map[string]any
		absent       []string
	}{
		{"deepseek-flash", "off", map[string]any{"thinking": map[string]any{"type": "disabled"}}, []string{"reasoning_effort"}},
		{"deepseek-flash", "high", map[string]any{"thinking": map[string]any{"type": "enabled"}, "reasoning_effort": "high"}, nil},
		{"deepseek-v4-pro", "max", map[string]any{"thinking": map[string]any{"type": "enabled"}, "reasoning_effort": "max"}, nil},
		{"deepseek-flash", "", nil, []string{"thinking", "reasoning_effort"}},
		{"qwen3:8b", "high", map[string]any{"reasoning_effort": "high"}, []string{"thinking"}},
		{"qwen3:8b", "off", map[string]any{"reasoning_effort": "none"}, []string{"thinking"}},
	}
	for _, tt := range tests {
		flavor := mockllm.DeepSeek
		if !agent.IsDeepSeek(tt.model) {
			flavor = mockllm.Ollama
		}
		m := mockllm.New(t, mockllm.Options{Flavor: flavor})
		req := simpleRequest()
		req.Thinking = tt.level
		if _, err := mockProvider(t, m, tt.model, nil).Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
			t.Fatalf("%s %s: %v", tt.model, tt.level, err)
		}
		body := m.Requests()[0].Body
		for k, v := range tt.want {
			if b1, b2 := jsonOf(body[k]), jsonOf(v); b1 != b2 {
				t.Errorf("%s %q: %s = %s, want %s", tt.model, tt.level, k, b1, b2)
			}
		}
		for _, k := range tt.absent {
			if _, ok := body[k]; ok {
				t.Errorf("%s %q: %s sent", tt.model, tt.level, k)
			}
		}
	}
}

// A level the endpoint refuses ends the prompt with an error that names
// the model, the level, what was sent and how to turn it down, not a bare
// 400 (Ollama refuses thinking for a model that cannot, and efforts it does
// not know).
func TestThinkingRefusedIsNamed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, level string
		want         []string
	}{
		{"deepseek-coder-v2:16b", "high", []string{`refused thought level "high" for model "deepseek-coder-v2:16b"`, `"reasoning_effort": "high"`,
			"does not support thinking", "--thinking off"}},
		{"deepseek-r1:8b", "max", []string{`refused thought level "max" for model "deepseek-r1:8b"`, "Thinking to High"}},
		{"qwen3:8b", "max", []string{`refused thought level "max" for model "qwen3:8b"`, `"reasoning_effort": "xhigh"`,
			`think value "xhigh" is not supported`, "without --thinking"}},
	}
	for _, tt := range tests {
		m := mockllm.New(t, mockllm.Options{Flavor: mockllm.Ollama, Models: []string{tt.model}, NoThinking: []string{"deepseek-coder-v2:16b"}})
		req := simpleRequest()
		req.Thinking = tt.level
		_, err := mockProvider(t, m, tt.model, nil).Stream(testutil.Context(t), req, func(agent.Delta) {})
		if !errors.Is(err, agent.ErrProvider) {
			t.Fatalf("%s %s: err = %v, want a provider error", tt.model, tt.level, err)
		}
		for _, w := range append(tt.want, m.URL) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: error %q lacks %q", tt.model, tt.level, err, w)
			}
		}
		// Off is what the error offers: it must get through.
		req.Thinking = agent.ThinkingOff
		if _, err := mockProvider(t, m, tt.model, nil).Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
			t.Errorf("%s off: %v", tt.model, err)
		}
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestUsageCacheAndCost(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	ds := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	p := mockProvider(t, ds, "deepseek-flash", nil)
	if _, err := p.Stream(ctx, simpleRequest(), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(ctx, simpleRequest(), func(agent.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u.CachedTokens == 0 || u.CachedTokens > u.PromptTokens || u.Cost != nil {
		t.Errorf("DeepSeek usage = %+v, want cache hits from prompt_cache_hit_tokens and no cost", u)
	}
	or := mockllm.New(t, mockllm.Options{Flavor: mockllm.OpenRouter})
	p = mockProvider(t, or, "deepseek/deepseek-v4-flash", nil)
	if _, err := p.Stream(ctx, simpleRequest(), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	resp, err = p.Stream(ctx, simpleRequest(), func(agent.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u.CachedTokens == 0 || u.Cost == nil || *u.Cost <= 0 {
		t.Errorf("OpenRouter usage = %+v, want cached_tokens and cost", u)
	}
}

func TestEndpointEdgeCases(t *testing.T) {
	t.Parallel()
	calls := []mockllm.Call{{ID: "call_a", Name: "bash", Args: `{"command":"ls"}`}, {ID: "call_b", Name: "bash", Args: `{"command":"pwd"}`}}
	tests := []struct {
		name      string
		flavor    mockllm.Flavor
		reply     mockllm.Reply
		wantCalls int
		wantErr   string
	}{
		{name: "ollama: stop with parallel calls all at index 0", flavor: mockllm.Ollama, reply: mockllm.Reply{Calls: calls}, wantCalls: 2},
		{name: "no finish_reason after complete calls", flavor: mockllm.Ollama, reply: mockllm.Reply{Calls: calls, Finish: "-"}, wantCalls: 2},
		{name: "no finish_reason inside a call", flavor: mockllm.Ollama,
			reply: mockllm.Reply{Calls: []mockllm.Call{{ID: "c", Name: "bash", Args: `{"comm`}}, Finish: "-"}, wantErr: "ended early"},
		{name: "finish with usage, connection left open", flavor: mockllm.DeepSeek, reply: mockllm.Reply{Text: "done", NoDone: true, Hold: true}},
		{name: "finish without usage, connection left open", flavor: mockllm.OpenRouter, reply: mockllm.Reply{Text: "done", NoDone: true, Hold: true, NoUsage: true}},
		{name: "finish without [DONE], connection closed", flavor: mockllm.OpenRouter, reply: mockllm.Reply{Text: "done", NoDone: true}},
		{name: "only keep-alive comments", flavor: mockllm.DeepSeek, reply: mockllm.Reply{OnlyComments: true}, wantErr: "sent no answer for"},
		{name: "answer over 8 MiB in many deltas' worth", flavor: mockllm.DeepSeek, reply: mockllm.Reply{Text: strings.Repeat("x", 8<<20+4096)}, wantErr: "larger than 8 MiB"},
		{name: "one line over 9 MiB", flavor: mockllm.DeepSeek, reply: mockllm.Reply{Text: strings.Repeat("y", 10<<20)}, wantErr: "larger than 8 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mockllm.New(t, mockllm.Options{Flavor: tt.flavor, Reply: func(int, mockllm.Request) mockllm.Reply { return tt.reply }})
			model := map[mockllm.Flavor]string{mockllm.DeepSeek: "deepseek-flash", mockllm.OpenRouter: "openai/gpt-5", mockllm.Ollama: "qwen3:8b"}[tt.flavor]
			idle := time.Hour
			if tt.reply.OnlyComments {
				idle = 300 * time.Millisecond
			}
			// The test's own bound is far below the idle timeout: an answer
			// that waited for [DONE] or the connection's end would fail it.
			ctx, cancel := context.WithTimeout(testutil.Context(t), 20*time.Second)
			defer cancel()
			resp, err := mockProvider(t, m, model, func(o *openai.Options) {
				o.IdleTimeout = idle
				o.FinishGrace = 50 * time.Millisecond
				o.MaxRetries = -1
			}).Stream(ctx, simpleRequest(), func(agent.Delta) {})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ctx.Err() != nil {
					t.Fatalf("err = %v, want one containing %q before the test's bound", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Message.ToolCalls) != tt.wantCalls {
				t.Errorf("calls = %+v, want %d", resp.Message.ToolCalls, tt.wantCalls)
			}
			if tt.wantCalls > 0 && resp.FinishReason != agent.FinishToolCalls {
				t.Errorf("finish = %q, want tool_calls", resp.FinishReason)
			}
		})
	}
}

// pngData is a 1×1 PNG, base64.
const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func imageRequest(mime string) agent.Request {
	return agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "sys"},
		{Role: agent.RoleUser, Content: "what is this?", Images: []agent.Image{{MimeType: mime, Data: pngData, Name: "file:///tmp/shot.png"}}},
	}}
}

func TestImagesAsDataURLs(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	if _, err := mockProvider(t, m, "deepseek-flash", nil).Stream(testutil.Context(t), imageRequest("image/png"), func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	parts, _ := m.Requests()[0].Messages()[1]["content"].([]any)
	if len(parts) != 2 {
		t.Fatalf("user content = %v, want text and image parts", m.Requests()[0].Messages()[1]["content"])
	}
	img := parts[1].(map[string]any)
	if img["type"] != "image_url" || img["image_url"].(map[string]any)["url"] != "data:image/png;base64,"+pngData {
		t.Errorf("image part = %v", img)
	}
}

func TestRefusedImageIsNamed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ model, mime string }{
		{"deepseek-v4-pro", "image/png"},      // a model that does not read images
		{"deepseek-flash", "application/pdf"}, // a type it does not read
	} {
		m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
		_, err := mockProvider(t, m, tt.model, nil).Stream(testutil.Context(t), imageRequest(tt.mime), func(agent.Delta) {})
		if !errors.Is(err, agent.ErrImageRefused) || !strings.Contains(err.Error(), `"file:///tmp/shot.png"`) {
			t.Errorf("%s %s: err = %v, want ErrImageRefused naming the image", tt.model, tt.mime, err)
		}
	}
}

// A tool's images follow its results as a user message: the chat API takes
// images in user messages only.
func TestToolImagesFollowTheResults(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	req := agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "sys"},
		{Role: agent.RoleUser, Content: "screenshot please"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "shot", Arguments: "{}"}, {ID: "c2", Name: "shot", Arguments: "{}"}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "[image: image/png, 1 KB]", Images: []agent.Image{{MimeType: "image/png", Data: pngData}}},
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "no image"},
	}}
	if _, err := mockProvider(t, m, "deepseek-flash", nil).Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	msgs := m.Requests()[0].Messages()
	if len(msgs) != 6 || msgs[3]["role"] != "tool" || msgs[4]["role"] != "tool" || msgs[5]["role"] != "user" {
		t.Fatalf("messages %v, want the image after both results", msgs)
	}
	if !strings.Contains(jsonOf(msgs[5]["content"]), "data:image/png;base64,"+pngData) {
		t.Errorf("the user message after the results = %v", msgs[5])
	}
	if _, ok := msgs[2]["reasoning_content"]; !ok {
		t.Errorf("the reasoning_content rule slipped with the extra message: %v", msgs[2])
	}
}
