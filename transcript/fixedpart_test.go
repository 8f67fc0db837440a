package transcript_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/tools/asktool"
)

// maxFixedPart bounds the part of every model request that does not grow
// with the conversation: the system prompt and the tools' JSON.
const maxFixedPart = 12288

// TestFixedPartSize measures that part as the goldens pin it (every
// scenario's requests are compared with these two files) with ask_user:
// the system prompt, for a session in a 40-byte directory, and each tool in the
// chat-completions form an endpoint is sent, {"type":"function",
// "function":{…}}, compact.
func TestFixedPartSize(t *testing.T) {
	prompt, err := os.ReadFile(filepath.Join(transcriptsDir, promptFile))
	if err != nil {
		t.Fatal(err)
	}
	system := strings.NewReplacer("$CWD", "/home/someone/src/github.com/org/project", "$DATE", "2026-12-06 (Sunday)").Replace(string(prompt))
	raw, err := os.ReadFile(filepath.Join(transcriptsDir, toolsFile))
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	// An editor that shows forms is offered ask_user too: the most a
	// request carries.
	ask := asktool.Tool()
	list = append(list, map[string]any{"name": ask.Name(), "description": ask.Description(), "parameters": ask.Schema()})
	wire := make([]any, len(list))
	names := make([]string, len(list))
	for i, tl := range list {
		wire[i] = map[string]any{"type": "function", "function": tl}
		names[i], _ = tl["name"].(string)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire); err != nil {
		t.Fatal(err)
	}
	systemJSON, _ := json.Marshal(system)
	total := len(systemJSON) + b.Len() - 1
	t.Logf("tools %s: system prompt %d bytes (JSON string), tools %d bytes, %d in all (limit %d)",
		strings.Join(names, ", "), len(systemJSON), b.Len()-1, total, maxFixedPart)
	for _, want := range []string{"read", "write", "edit", "glob", "grep"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Fatalf("the pinned tools lack %s: measured without the file tools", want)
		}
	}
	if total > maxFixedPart {
		t.Errorf("the fixed part of a request is %d bytes, over %d", total, maxFixedPart)
	}
}
