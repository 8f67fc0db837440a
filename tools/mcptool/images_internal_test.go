package mcptool

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An image block is noted in the text and handed on, base64, for a model
// that reads images.
func TestResultImages(t *testing.T) {
	t.Parallel()
	raw := []byte("\x89PNG fake")
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "here"},
		&mcp.ImageContent{MIMEType: "image/png", Data: raw},
	}}
	r := toResult(Outcome{Text: resultText(res), Images: resultImages(res)})
	if !strings.Contains(r.Text, "[image: image/png") {
		t.Errorf("text %q lacks the note", r.Text)
	}
	if len(r.Images) != 1 || r.Images[0].MimeType != "image/png" || r.Images[0].Data != base64.StdEncoding.EncodeToString(raw) {
		t.Errorf("images %+v", r.Images)
	}
}
