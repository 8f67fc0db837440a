package transcript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpModeEnv makes the test binary, started by dsh-acp as $TMP/mcp-server,
// an MCP server over stdio.
const mcpModeEnv = "DSH_TRANSCRIPT_MCP"

// mcpMain serves two tools: echo {text} (read-only) and stats (text and
// structured content).
func mcpMain(mode string) int {
	if mode != "serve" {
		return 2
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "transcript-server", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"What to echo."}},"required":["text"]}`)
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "stats", Description: "Count the files.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "3 files"}},
				StructuredContent: map[string]any{"files": 3},
			}, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
	}
	return 0
}
