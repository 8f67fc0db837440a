package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAPIKeyHiddenFromCommands: the key reaches the model endpoint, but a
// command cannot print it — not from its own environment and not from the
// agent's (/proc/$PPID/environ), even as root.
func TestAPIKeyHiddenFromCommands(t *testing.T) {
	t.Parallel()
	const key = "sk-test-secret-7f3a9c"
	probe := `cat /proc/$PPID/environ | tr '\0' '\n'; echo ---; env; echo ---; cat /proc/$PPID/cmdline | tr '\0' ' '`

	var mu sync.Mutex
	var auth []string
	var toolResult string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r) // the model list: the fallback is fine here
			return
		}
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		n := len(auth)
		for _, m := range req.Messages {
			if m.Role == "tool" {
				toolResult = fmt.Sprint(m.Content)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			args, _ := json.Marshal(map[string]any{"command": probe, "description": "Look for the key"})
			chunk(w, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": string(args)},
			}}}, "")
			chunk(w, map[string]any{}, "tool_calls")
		} else {
			chunk(w, map[string]any{"role": "assistant", "content": "done"}, "")
			chunk(w, map[string]any{}, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "exec", "--base-url", srv.URL+"/v1", "--yes", "--cwd", t.TempDir(), "look")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_API_KEY=" + key, "FOO_TOKEN=also-secret"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 2 || auth[0] != "Bearer "+key || auth[1] != "Bearer "+key {
		t.Errorf("Authorization headers = %q, want the key on both requests", auth)
	}
	if !strings.Contains(toolResult, "---") {
		t.Fatalf("the probe did not run: tool result %q", toolResult)
	}
	for _, secret := range []string{key, "also-secret"} {
		if strings.Contains(toolResult, secret) {
			t.Errorf("a command printed %q:\n%s", secret, toolResult)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("exec output shows %q", secret)
		}
	}
}

func chunk(w io.Writer, delta map[string]any, finish string) {
	choice := map[string]any{"index": 0, "delta": delta}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": []any{choice}})
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// TestForeignSecretsFDIgnored: a hand-over variable the program did not set
// itself (here pointing at stdin) is ignored: stdin stays the protocol's and
// initialize is answered.
// secretsFDEnv is the variable a re-executed dsh-acp reads its
// credentials' descriptor from (internal/secretenv).
const secretsFDEnv = "DSH_ACP_SECRETS_FD"

func TestForeignSecretsFDIgnored(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "--script", writeScript(t, `{"text":"hi"}`))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), secretsFDEnv + "=0"}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("server with a foreign %s: %v", secretsFDEnv, err)
	}
	if !strings.Contains(string(out), `"protocolVersion":1`) {
		t.Errorf("initialize not answered; stdout %q", out)
	}
}
