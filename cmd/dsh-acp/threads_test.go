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

// threadAgent starts the real binary against m with its own home and
// state directory (state may be shared by two processes, one after the
// other: a restart) and initializes it with caps as the client's
// capabilities.
func threadAgent(t *testing.T, ctx context.Context, m *mockllm.Server, state string, caps map[string]any, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"--base-url", m.URL, "--default-mode", "auto"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state, "DSH_API_KEY=test"}
	p := startCmd(t, cmd)
	if caps == nil {
		caps = map[string]any{}
	}
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	return p
}

// stopAgent closes the agent's stdin and waits for it to exit.
func stopAgent(t *testing.T, ctx context.Context, p *proc) {
	t.Helper()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Fatal("agent did not exit")
	}
}

// prompt sends a prompt of blocks and returns its reply's result, with the
// session updates that came before it.
func (p *proc) prompt(ctx context.Context, sid string, blocks ...any) (result map[string]any, updates []map[string]any) {
	p.t.Helper()
	id := p.send("session/prompt", map[string]any{"sessionId": sid, "prompt": blocks})
	m := p.await(ctx, "session/prompt response", func(m map[string]any) bool {
		if m["method"] == "session/update" {
			params, _ := m["params"].(map[string]any)
			if params["sessionId"] == sid {
				u, _ := params["update"].(map[string]any)
				updates = append(updates, u)
			}
			return false
		}
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	if e, ok := m["error"]; ok {
		p.t.Fatalf("session/prompt failed: %v", e)
	}
	return m["result"].(map[string]any), updates
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// infoUpdates are the session_info_updates among updates.
func infoUpdates(updates []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range updates {
		if u["sessionUpdate"] == "session_info_update" {
			out = append(out, u)
		}
	}
	return out
}

// Every turn ends with a session_info_update carrying updatedAt, a slash
// command's included; the title is the first real prompt's first line as
// typed (a slash command does not name the thread), without the pasted
// selection and the code fence, cut at a word at 80 characters.
func TestTurnEndsWithSessionInfo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	p := threadAgent(t, ctx, m, t.TempDir(), nil)
	cwd := t.TempDir()
	sid := p.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["sessionId"].(string)

	_, updates := p.prompt(ctx, sid, textBlock("/plan"))
	infos := infoUpdates(updates)
	if len(infos) != 1 || infos[len(infos)-1]["updatedAt"] == nil {
		t.Fatalf("a slash command's turn sent session_info_updates %v, want one with updatedAt", infos)
	}
	if _, titled := infos[0]["title"]; titled {
		t.Errorf("a slash command named the thread: %v", infos[0])
	}

	pasted := map[string]any{"type": "resource", "resource": map[string]any{"uri": "file://" + cwd + "/main.go#L1:3", "mimeType": "text/x-go", "text": "package main\nfunc main() {}\n"}}
	link := map[string]any{"type": "resource_link", "name": "main.go", "uri": "file://" + cwd + "/main.go"}
	_, updates = p.prompt(ctx, sid, pasted,
		textBlock("```\nbuild output\n```\nWhy does the build of "), link,
		textBlock(" fail on the second run when the cache directory is shared between two users of the machine?\nmore"))
	infos = infoUpdates(updates)
	want := "Why does the build of @main.go fail on the second run when the cache directory"
	if len(infos) == 0 {
		t.Fatal("no session_info_update")
	}
	last := infos[len(infos)-1]
	if last["title"] != want || last["updatedAt"] == nil {
		t.Errorf("last session_info_update %v, want title %q and updatedAt", last, want)
	}
	if ts, _ := last["updatedAt"].(string); ts != "" {
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("updatedAt %q: %v", ts, err)
		}
	}
	list := p.call(ctx, "session/list", map[string]any{})["sessions"].([]any)
	if got := list[0].(map[string]any)["title"]; got != want {
		t.Errorf("session/list title %v, want %q", got, want)
	}
	stopAgent(t, ctx, p)
}

// A model's refusal (finish_reason content_filter) ends the turn with
// stopReason refusal.
func TestRefusalStopReason(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek, Reply: func(int, mockllm.Request) mockllm.Reply {
		return mockllm.Reply{Text: "I can't help with that.", Finish: "content_filter"}
	}})
	p := threadAgent(t, ctx, m, t.TempDir(), nil)
	sid := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})["sessionId"].(string)
	res, _ := p.prompt(ctx, sid, textBlock("something refused"))
	if res["stopReason"] != "refusal" {
		t.Errorf("stopReason %v, want refusal", res["stopReason"])
	}
	stopAgent(t, ctx, p)
}

// A prompt sent right after session/new, while the session's MCP server is
// still starting, is offered the server's tools in its first request.
func TestMCPToolsInFirstRequest(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	p := threadAgent(t, ctx, m, t.TempDir(), nil)
	servers := []any{map[string]any{"name": "slow", "command": self, "args": []string{},
		"env": []any{map[string]any{"name": mcpServerEnv, "value": "slow"}}}}
	sid := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": servers})["sessionId"].(string)
	p.prompt(ctx, sid, textBlock("hello"))
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	var names []string
	tools, _ := reqs[0].Body["tools"].([]any)
	for _, tl := range tools {
		fn, _ := tl.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		names = append(names, name)
	}
	if !strings.Contains(strings.Join(names, " "), "mcp__slow__big") {
		t.Errorf("first request offers %v, want mcp__slow__big among them", names)
	}
	stopAgent(t, ctx, p)
}
