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
// structured content); in mode "elicit" also confirm, which asks the user
// (elicitation/create) before it answers.
func mcpMain(mode string) int {
	if mode != "serve" && mode != "elicit" {
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
	if mode == "elicit" {
		srv.AddTool(&mcp.Tool{Name: "confirm", Description: "Delete the old files, once the user agrees.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
			confirmTool)
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
	}
	return 0
}

// confirmTool asks the user through the client and says what it heard:
// as servers of MCP 2026-07-28 do, it answers its first call with an input
// request (the client asks the user and calls again with the answer), and
// the SDK turns that into an elicitation/create request for a client of
// an older protocol.
func confirmTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	resp, ok := req.Params.InputResponses["sure"]
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"sure": &mcp.ElicitParams{
			Mode:            "form",
			Message:         "Delete 3 old files?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"sure":{"type":"boolean","title":"Sure?"}},"required":["sure"]}`),
		}}}, nil
	}
	text := ""
	switch res, _ := resp.(*mcp.ElicitResult); {
	case res == nil:
		text = fmt.Sprintf("could not ask: %T", resp)
	case res.Action == "accept":
		text = fmt.Sprintf("the user answered sure=%v", res.Content["sure"])
	default:
		text = "the user chose " + res.Action
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}
