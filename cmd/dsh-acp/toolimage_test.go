package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
)

// An image an MCP tool returned is part of the session: it is stored once,
// beside the log (not inline in its lines), and after a restart and a
// session/load the model is sent the same image_url as before. The MCP
// server is a real one over stdio (this test binary serving "picture"),
// the agent the real binary, the model a DeepSeek-like endpoint whose
// deepseek-flash reads images.
func TestMCPToolImageSurvivesRestart(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek, Reply: func(n int, _ mockllm.Request) mockllm.Reply {
		if n == 0 {
			return mockllm.Reply{Calls: []mockllm.Call{{ID: "call-1", Name: "mcp__pics__picture", Args: "{}"}}}
		}
		return mockllm.Reply{Text: "a red square"}
	}})
	state, cwd := t.TempDir(), t.TempDir()
	start := func() *proc {
		cmd := exec.Command(binPath, "--base-url", m.URL, "--default-mode", "auto")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state, "DSH_API_KEY=test"}
		p := startCmd(t, cmd)
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
		return p
	}
	servers := []any{map[string]any{"name": "pics", "command": self, "args": []string{},
		"env": []any{map[string]any{"name": mcpServerEnv, "value": "image"}}}}
	stop := func(p *proc) {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatal("agent did not exit")
		}
	}

	first := start()
	sid := first.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": servers})["sessionId"].(string)
	first.call(ctx, "session/prompt", promptParams(sid, "show me the picture"))
	stop(first)

	second := start()
	second.call(ctx, "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": servers})
	second.call(ctx, "session/prompt", promptParams(sid, "what colour was it?"))
	stop(second)

	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(mcpPicture())
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (call, answer, after the restart)", len(reqs))
	}
	if got := imageURLs(reqs[1]); !slices.Equal(got, []string{want}) {
		t.Fatalf("the request after the call carries images %.80q, want the tool's", got)
	}
	if got := imageURLs(reqs[2]); !slices.Equal(got, []string{want}) {
		t.Errorf("after a restart and load the request carries images %.80q, want the same as before", got)
	}
	checkStoredOnce(t, state, mcpPicture())
}

// imageURLs are the image_url URLs of a request's messages, in order.
func imageURLs(r mockllm.Request) []string {
	var out []string
	for _, msg := range r.Messages() {
		parts, _ := msg["content"].([]any)
		for _, p := range parts {
			part, _ := p.(map[string]any)
			if iu, ok := part["image_url"].(map[string]any); ok {
				url, _ := iu["url"].(string)
				out = append(out, url)
			}
		}
	}
	return out
}

// checkStoredOnce: under state, one file holds image, in a .images
// directory, and no other file carries its base64.
func checkStoredOnce(t *testing.T, state string, image []byte) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString(image)
	var kept int
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case bytes.Equal(data, image) && strings.HasSuffix(filepath.Dir(path), ".images"):
			kept++
		case bytes.Contains(data, []byte(b64)):
			t.Errorf("%s carries the image inline", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept != 1 {
		t.Errorf("the image is stored %d times beside the log, want once", kept)
	}
}
