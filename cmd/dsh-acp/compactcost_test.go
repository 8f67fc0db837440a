package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
)

// The cost of a /compact's summary request is in the session's cost the
// editor is shown, and it survives a restart: session/load shows the same
// total, which is what the endpoint said every request cost (OpenRouter's
// usage.cost), the summary request's included.
func TestCompactionCostSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.OpenRouter, Reply: func(_ int, req mockllm.Request) mockllm.Reply {
		for _, msg := range req.Messages() {
			if text, _ := msg["content"].(string); strings.HasPrefix(text, "Summarize the conversation below.") {
				return mockllm.Reply{Text: "Three prompts, three answers."}
			}
		}
		return mockllm.Reply{Text: "ok"}
	}})
	state, cwd := t.TempDir(), t.TempDir()
	start := func() *proc {
		cmd := exec.Command(binPath, "--base-url", m.URL, "--model", "deepseek/deepseek-v4-flash")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state, "DSH_API_KEY=test"}
		p := startCmd(t, cmd)
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
		return p
	}
	// lastCost calls method and returns the cost of the last usage_update
	// sent for sid before its reply.
	lastCost := func(p *proc, method string, params any) float64 {
		id := p.send(method, params)
		cost := -1.0
		p.await(ctx, method+" response", func(msg map[string]any) bool {
			if f, ok := msg["id"].(float64); ok && int(f) == id && msg["method"] == nil {
				if msg["error"] != nil {
					t.Fatalf("%s failed: %v", method, msg["error"])
				}
				return true
			}
			params, _ := msg["params"].(map[string]any)
			up, _ := params["update"].(map[string]any)
			if c, ok := up["cost"].(map[string]any); ok && up["sessionUpdate"] == "usage_update" {
				cost, _ = c["amount"].(float64)
			}
			return false
		})
		return cost
	}

	first := start()
	sid := first.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["sessionId"].(string)
	for _, p := range []string{"one", "two", "three"} {
		first.call(ctx, "session/prompt", promptParams(sid, p))
	}
	before := len(m.Usages())
	shown := lastCost(first, "session/prompt", promptParams(sid, "/compact"))
	stop := func(p *proc) {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatal("agent did not exit")
		}
	}
	stop(first)

	usages := m.Usages()
	if len(usages) != before+1 {
		t.Fatalf("/compact made %d requests, want the summary request", len(usages)-before)
	}
	var want float64
	for _, u := range usages {
		want += u["cost"].(float64)
	}
	if math.Abs(shown-want) > 1e-12 {
		t.Errorf("after /compact the editor was shown cost %v, want %v (every request's, the summary's %v included)", shown, want, usages[before]["cost"])
	}

	second := start()
	loaded := lastCost(second, "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
	if math.Abs(loaded-want) > 1e-12 {
		t.Errorf("after a restart the load shows cost %v, want %v", loaded, want)
	}
	stop(second)
}
