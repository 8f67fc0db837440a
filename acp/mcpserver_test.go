package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpEvents are what the in-process (HTTP) server tells its test.
type mcpEvents struct {
	slowStarted chan struct{}
	sawCancel   chan struct{}
}

// newMCPServer is the test server both transports serve:
//   - echo {text}: "echo: <text>", annotated read-only;
//   - fail: an isError result "boom";
//   - stats: structured content {"files":3} beside its text;
//   - slow: blocks until cancelled (ev, if set, hears both ends).
func newMCPServer(ev *mcpEvents) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "acp-test-server", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: obj,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("echo: " + a.Text), nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("boom")
			r.IsError = true
			return r, nil
		})
	srv.AddTool(&mcp.Tool{Name: "stats", Description: "Counts files.", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("3 files")
			r.StructuredContent = map[string]any{"files": 3}
			return r, nil
		})
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Blocks until cancelled.", InputSchema: obj},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ev != nil {
				close(ev.slowStarted)
			}
			<-ctx.Done()
			if ev != nil {
				close(ev.sawCancel)
			}
			return nil, ctx.Err()
		})
	return srv
}

// mcpChildMain is the re-executed test binary: "serve" is the MCP server
// over stdio, "fail" exits at once as a server with a bad config does.
func mcpChildMain(mode string) int {
	switch mode {
	case "serve":
		if err := newMCPServer(nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "run:", err)
		}
		return 0
	case "fail":
		fmt.Fprintln(os.Stderr, "bad config: no database")
		return 1
	}
	return 2
}

// stdioServer is the editor's entry for the re-executed test binary.
func stdioServer(t *testing.T, name, mode string) acpsdk.McpServer {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{
		Name: name, Command: self, Args: []string{},
		Env: []acpsdk.EnvVariable{{Name: testutil.ChildEnv, Value: mode}},
	}}
}

// httpServer serves the test server over streamable HTTP on 127.0.0.1 and
// returns the editor's entry for it.
func httpServer(t *testing.T, name string) (acpsdk.McpServer, *mcpEvents) {
	t.Helper()
	ev := &mcpEvents{slowStarted: make(chan struct{}), sawCancel: make(chan struct{})}
	srv := newMCPServer(ev)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: name, Url: ts.URL, Headers: []acpsdk.HttpHeader{}}}, ev
}
