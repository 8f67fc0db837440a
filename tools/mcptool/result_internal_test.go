package mcptool

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawOutput is never empty when the server answered: its structured content,
// else its blocks, else (blocks too large to send on every update) their
// count and size.
func TestStructuredResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"structured", &mcp.CallToolResult{StructuredContent: map[string]int{"files": 3}, Content: []mcp.Content{&mcp.TextContent{Text: "3 files"}}}, `{"files":3}`},
		{"blocks", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, `{"content":[{"type":"text","text":"hi"}]}`},
		{"empty", &mcp.CallToolResult{}, `{"content":[]}`},
		{"error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}}, `{"content":[{"type":"text","text":"boom"}],"isError":true}`},
		{"large", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100<<10)}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")}}},
			`{"contentOmitted":{"blocks":2,"bytes":102493},"isError":false}`},
	} {
		if got := string(structured(tc.res)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
