package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
)

// TestRefusedPromptNotKept: a prompt refused because it alone exceeds the
// context window was never sent, so it is not kept — neither in memory
// (the next prompt's request does not carry it, and succeeds) nor in the
// store (after a restart and session/load, the next request does not
// carry it either).
func TestRefusedPromptNotKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{})
	state, cwd := t.TempDir(), t.TempDir()
	start := func() *proc {
		cmd := exec.Command(binPath, "--base-url", m.URL, "--context-window", "8000")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state, "DSH_API_KEY=test-key-for-the-mock"}
		p := startCmd(t, cmd)
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
		return p
	}
	stop := func(p *proc) {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatal("agent did not exit")
		}
	}
	// users are the user messages of the model's last request.
	users := func() []string {
		reqs := m.Requests()
		var out []string
		for _, msg := range reqs[len(reqs)-1].Messages() {
			if msg["role"] == "user" {
				text, _ := msg["content"].(string)
				out = append(out, text)
			}
		}
		return out
	}
	big := strings.Repeat("huge ", 20000) // ~25,000 tokens, over the 8,000 of the window

	first := start()
	sid := first.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["sessionId"].(string)
	first.call(ctx, "session/prompt", promptParams(sid, "one"))
	sent := len(m.Requests())
	e, _ := first.errorOf(ctx, "session/prompt", promptParams(sid, big))
	if msg, _ := e["message"].(string); !strings.Contains(msg, "this prompt alone is about") || !strings.Contains(msg, "it was not sent") {
		t.Fatalf("the big prompt: error %v, want the one saying it alone does not fit", e)
	}
	if n := len(m.Requests()); n != sent {
		t.Fatalf("the big prompt made %d model requests, want none", n-sent)
	}
	first.call(ctx, "session/prompt", promptParams(sid, "two"))
	if got := users(); strings.Join(got, "|") != "one|two" {
		t.Errorf("the next prompt's request carries user messages %.80q, want one and two only", got)
	}
	stop(first)

	second := start()
	second.call(ctx, "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
	second.call(ctx, "session/prompt", promptParams(sid, "three"))
	if got := users(); strings.Join(got, "|") != "one|two|three" {
		t.Errorf("after a restart the request carries user messages %.80q, want one, two and three only", got)
	}
	stop(second)
}
