package scripted_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/scripted"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestUsageAndContextExceeded(t *testing.T) {
	t.Parallel()
	p := parse(t, `{"text":"a","usage":{"prompt_tokens":1200,"completion_tokens":34}}
{"text":"b"}
{"context_exceeded":true}
{"context_exceeded":true,"error":"maximum context length is 8192 tokens"}`)
	req := agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}
	resp, err := p.Stream(testutil.Context(t), req, func(agent.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234, Reported: true}, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if resp, err = p.Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil || resp.Usage.Reported {
		t.Errorf("a turn without usage: %+v, %v", resp.Usage, err)
	}
	for _, want := range []string{"maximum context length is exceeded", "maximum context length is 8192 tokens"} {
		_, err = p.Stream(testutil.Context(t), req, func(agent.Delta) {})
		if !errors.Is(err, agent.ErrContextExceeded) || !errors.Is(err, agent.ErrProvider) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want a context-exceeded provider error with %q", err, want)
		}
	}
	if _, err := parseErr(`{"context_exceeded":true,"hang":true}`); err == nil {
		t.Error("context_exceeded with hang parsed")
	}
	if _, err := parseErr(`{"usage":{"prompt_tokens":-1}}`); err == nil {
		t.Error("negative usage parsed")
	}
}

func parseErr(script string) (*scripted.Provider, error) {
	return scripted.Parse(strings.NewReader(script), "test.jsonl")
}
