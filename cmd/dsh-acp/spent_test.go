package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// exec's last stderr line says what the turn took, and what it cost when
// that is known: DeepSeek's built-in prices, or --price for another model.
func TestExecPrintsTokensAndCost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		flavor   mockllm.Flavor
		args     []string
		wantCost bool
	}{
		{"deepseek built-in price", mockllm.DeepSeek, nil, true},
		{"local model, no price", mockllm.Ollama, []string{"--model", "qwen3:8b"}, false},
		{"local model with --price", mockllm.Ollama, []string{"--model", "qwen3:8b", "--price", "in=1,out=2"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mockllm.New(t, mockllm.Options{Flavor: tt.flavor})
			var out, errb bytes.Buffer
			args := append([]string{"exec", "--no-persist", "--base-url", m.URL, "--cwd", t.TempDir()}, tt.args...)
			code := run(testutil.Context(t), append(args, "hello"), nil, &out, &errb, noEnv)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "dsh-acp exec: tokens: ") || !strings.Contains(last, " out") {
				t.Errorf("last stderr line %q, want the turn's tokens", last)
			}
			if got := strings.Contains(last, "cost: ") && strings.HasSuffix(last, " USD"); got != tt.wantCost {
				t.Errorf("last stderr line %q: cost shown %v, want %v", last, got, tt.wantCost)
			}
		})
	}
}
