package openai

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
)

func TestKeepReasoning(t *testing.T) {
	t.Parallel()
	var (
		sys      = agent.Message{Role: agent.RoleSystem}
		user     = agent.Message{Role: agent.RoleUser}
		answer   = agent.Message{Role: agent.RoleAssistant, ReasoningContent: "r"}
		call     = agent.Message{Role: agent.RoleAssistant, ReasoningContent: "r", ToolCalls: []agent.ToolCall{{ID: "c"}}}
		result   = agent.Message{Role: agent.RoleTool, ToolCallID: "c"}
		assorted = []agent.Message{sys, user, answer}
	)
	tests := []struct {
		name string
		msgs []agent.Message
		want []bool
	}{
		{name: "empty", msgs: nil, want: []bool{}},
		{name: "answer after the last user message is kept", msgs: assorted, want: []bool{false, false, true}},
		{name: "tool loop under way", msgs: []agent.Message{user, call, result, call, result}, want: []bool{false, true, false, true, false}},
		{
			name: "earlier turn without tools is dropped",
			msgs: []agent.Message{sys, user, answer, user},
			want: []bool{false, false, false, false},
		},
		{
			name: "earlier turn with tools keeps every assistant message of that turn",
			msgs: []agent.Message{user, call, result, answer, user, answer, user},
			want: []bool{false, true, false, true, false, false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, keepReasoning(tt.msgs)); diff != "" {
				t.Errorf("keepReasoning (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{name: "none", header: http.Header{}},
		{name: "seconds", header: http.Header{"Retry-After": {"2"}}, want: 2 * time.Second, wantOK: true},
		{name: "zero", header: http.Header{"Retry-After": {"0"}}, want: 0, wantOK: true},
		{name: "milliseconds win", header: http.Header{"Retry-After-Ms": {"150"}, "Retry-After": {"9"}}, want: 150 * time.Millisecond, wantOK: true},
		{name: "http date", header: http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, want: 3 * time.Second, wantOK: true},
		{name: "date in the past", header: http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, want: 0, wantOK: true},
		{name: "huge is past the cap", header: http.Header{"Retry-After": {"1e300"}}, want: maxRetryAfter + time.Second, wantOK: true},
		{name: "garbage", header: http.Header{"Retry-After": {"soon"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseRetryAfter(tt.header, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "https://api.deepseek.com/v1/"},
		{"https://api.deepseek.com", "https://api.deepseek.com/v1/"},
		{"https://api.openai.com/v1", "https://api.openai.com/v1/"},
		{"http://localhost:11434/v1/", "http://localhost:11434/v1/"},
		{"http://10.0.0.5:8000/v1/chat/completions", "http://10.0.0.5:8000/v1/"},
		{"https://gw.example.com/openai/deployments/x", "https://gw.example.com/openai/deployments/x/"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			u, err := normalizeBaseURL(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tt.want {
				t.Errorf("normalizeBaseURL(%q) = %q, want %q", tt.in, u, tt.want)
			}
		})
	}
}
