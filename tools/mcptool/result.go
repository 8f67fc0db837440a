package mcptool

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/tools"
)

// resultText renders a tools/call result for the model, before truncation:
// content blocks in order, one per line — text as is, an image or audio
// block as a note (`[image: image/png, 12 KB]`), a resource link as
// `[resource link: <uri> (<name>, <mime>)]`, an embedded text resource as
// `[resource: <uri>]` and its text, an embedded blob as a note — then the
// structured content as JSON unless a text block already holds that same
// JSON (servers are asked to send both). An empty result reads
// `(no output)`; an isError result is prefixed `Error: ` unless it already
// starts with it.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	var texts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *mcp.ResourceLink:
			parts = append(parts, linkNote(c))
		case *mcp.EmbeddedResource:
			parts = append(parts, embeddedNote(c.Resource))
		default:
			parts = append(parts, fmt.Sprintf("[unsupported content: %T]", c))
		}
	}
	if r.StructuredContent != nil {
		if js, err := json.Marshal(r.StructuredContent); err == nil && !anySameJSON(texts, js) {
			parts = append(parts, string(js))
		}
	}
	text := strings.Join(parts, "\n")
	if text == "" {
		text = "(no output)"
	}
	if r.IsError && !strings.HasPrefix(text, "Error:") {
		text = "Error: " + text
	}
	return text
}

// resultImages are the result's image blocks, base64, for a model that
// reads images (the text notes each one either way).
func resultImages(r *mcp.CallToolResult) []tools.Image {
	var out []tools.Image
	for _, c := range r.Content {
		if img, ok := c.(*mcp.ImageContent); ok && len(img.Data) > 0 {
			out = append(out, tools.Image{MimeType: img.MIMEType, Data: base64.StdEncoding.EncodeToString(img.Data)})
		}
	}
	return out
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// size renders a byte count the way the notes show it: "512 B", "12 KB",
// "3.4 MB" (1 KB = 1024 bytes).
func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%d KB", (n+512)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

func linkNote(l *mcp.ResourceLink) string {
	var meta []string
	name := l.Title
	if name == "" {
		name = l.Name
	}
	if name != "" {
		meta = append(meta, name)
	}
	if l.MIMEType != "" {
		meta = append(meta, l.MIMEType)
	}
	if l.Size != nil {
		meta = append(meta, size(int(*l.Size)))
	}
	s := "[resource link: " + l.URI
	if len(meta) > 0 {
		s += " (" + strings.Join(meta, ", ") + ")"
	}
	return s + "]"
}

func embeddedNote(r *mcp.ResourceContents) string {
	if r == nil {
		return "[resource]"
	}
	if r.Blob != nil || r.Text == "" && r.MIMEType != "" && !strings.HasPrefix(r.MIMEType, "text/") {
		return fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob)))
	}
	return "[resource: " + r.URI + "]\n" + r.Text
}

// anySameJSON reports whether one of texts is JSON equal to js.
func anySameJSON(texts []string, js []byte) bool {
	var want any
	if json.Unmarshal(js, &want) != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// structured is the result's structured content as JSON, or nil.
func structured(r *mcp.CallToolResult) json.RawMessage {
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			return b
		}
	}
	// No structured content: the result as the server sent it, content
	// blocks and isError, so the editor's rawOutput is never empty. An
	// image or a large text would make every update heavy: past
	// maxRawBytes only the blocks' count and size are said.
	wire := struct {
		Content []mcp.Content `json:"content"`
		IsError bool          `json:"isError,omitempty"`
	}{r.Content, r.IsError}
	if wire.Content == nil {
		wire.Content = []mcp.Content{}
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return nil
	}
	if len(b) > maxRawBytes {
		b, err = json.Marshal(map[string]any{
			"isError":        r.IsError,
			"contentOmitted": map[string]int{"blocks": len(r.Content), "bytes": len(b)},
		})
		if err != nil {
			return nil
		}
	}
	return b
}

// maxRawBytes bounds the rawOutput made from a result's content blocks.
const maxRawBytes = 64 << 10

// cutTail keeps the last max bytes of s, starting on a rune boundary.
func cutTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	t := s[len(s)-max:]
	for i := 0; i < utf8.UTFMax-1 && i < len(t) && !utf8.RuneStart(t[0]); i++ {
		t = t[1:]
	}
	return t
}
