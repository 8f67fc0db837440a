package execclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPConfigFile: the common {"mcpServers": …} shape, stdio and HTTP.
func TestMCPConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(s string) string {
		path := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	servers, err := LoadMCPConfig(write(`{"mcpServers": {
		"web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
		"files": {"command": "files-mcp", "args": ["--root", "."], "env": {"B": "2", "A": "1"}}
	}}`))
	if err != nil || len(servers) != 2 {
		t.Fatalf("load: %v %v", servers, err)
	}
	f, w := servers[0].Stdio, servers[1].Http
	if f == nil || f.Name != "files" || f.Command != "files-mcp" || len(f.Args) != 2 || len(f.Env) != 2 || f.Env[0].Name != "A" {
		t.Errorf("stdio server: %+v", f)
	}
	if w == nil || w.Name != "web" || w.Url != "http://127.0.0.1:9/mcp" || len(w.Headers) != 1 || w.Headers[0].Value != "Bearer x" {
		t.Errorf("http server: %+v", w)
	}
	for body, want := range map[string]string{
		`{"servers": {}}`:                                     "unknown field",
		`{"mcpServers": {"x": {}}}`:                           "needs a command",
		`{"mcpServers": {"x": {"command": "a", "url": "b"}}}`: "both command and url",
		`{"mcpServers": `:                                     "want {",
		`{}`:                                                  "no \"mcpServers\"",
		`{"mcpServers": {"x": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}`: "HTTP+SSE transport is not supported",
		`{"mcpServers": {"x": {"type": "websocket", "url": "ws://a"}}}`:           `type "websocket"`,
	} {
		if _, err := LoadMCPConfig(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", body, err, want)
		}
	}
}
