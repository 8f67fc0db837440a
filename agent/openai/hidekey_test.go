package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
)

// TestHideKey: a key is hidden as a whole token, and only one long enough
// to be a key; a placeholder key garbles nothing.
func TestHideKey(t *testing.T) {
	t.Parallel()
	const real = "sk-or-v1-0123456789abcdef"
	for _, c := range []struct{ name, s, key, want string }{
		{"placeholder in a model id", "model ollama-coder not found", "ollama", "model ollama-coder not found"},
		{"placeholder EMPTY", "EMPTY key: EMPTY", "EMPTY", "EMPTY key: EMPTY"},
		{"one letter", "every e stays", "e", "every e stays"},
		{"whole token", "invalid key " + real + ".", real, "invalid key [API key]."},
		{"quoted", `"Bearer ` + real + `"`, real, `"Bearer [API key]"`},
		{"twice", real + "," + real, real, "[API key],[API key]"},
		{"a long key glued to a word", "x" + real + "y", real, "x[API key]y"},
		{"a short key inside a word", "monkeys token-abc1234", "monkeys", "monkeys token-abc1234"},
		{"a short key as a token", "key token-abc123 refused", "token-abc123", "key [API key] refused"},
		{"a short key inside a longer token", "token-abc1234", "token-abc123", "token-abc1234"},
		{"no key", "nothing here", "", "nothing here"},
	} {
		if got := openai.HideKey(c.s, c.key); got != c.want {
			t.Errorf("%s: HideKey(%q, %q) = %q, want %q", c.name, c.s, c.key, got, c.want)
		}
	}
}

// TestPlaceholderKeyGarblesNothing: with Ollama's placeholder key, the
// endpoint's refusal of model "ollama-coder" is reported as it is, the
// model's name intact.
func TestPlaceholderKeyGarblesNothing(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.Ollama})
	p, err := openai.New(openai.Options{BaseURL: m.URL, Model: "ollama-coder", APIKey: "ollama", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), simpleRequest(), func(agent.Delta) {})
	if err == nil || !strings.Contains(err.Error(), "ollama-coder") || strings.Contains(err.Error(), "[API key]") {
		t.Errorf("error %v, want the model named as it is", err)
	}
}
