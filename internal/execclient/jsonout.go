package execclient

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// JSONVersion is the version of exec --json's event format, in the first
// event. It changes only when a field changes meaning or goes away; new
// event types and fields do not change it.
const JSONVersion = 1

// events writes exec --json's stream: one JSON object a line, "type"
// first, "version" in the first line whatever its type. The README's
// "exec --json" section lists every type and field.
type events struct {
	mu    sync.Mutex
	w     io.Writer
	wrote bool
}

// emit writes one event. fields never holds "type" or "version".
func (e *events) emit(typ string, fields map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	writeJSON(&b, typ)
	if !e.wrote {
		b.WriteString(`,"version":`)
		writeJSON(&b, JSONVersion)
		e.wrote = true
	}
	if len(fields) > 0 {
		var rest bytes.Buffer
		writeJSON(&rest, fields)
		b.WriteByte(',')
		// The object's fields without its braces (and the encoder's newline).
		b.Write(bytes.TrimSpace(rest.Bytes())[1 : len(bytes.TrimSpace(rest.Bytes()))-1])
	}
	b.WriteString("}\n")
	e.w.Write(b.Bytes()) //nolint:errcheck // stdout gone: nothing left to tell
}

// writeJSON encodes v without escaping <, > and & (the stream is read by
// programs, not pasted into HTML).
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(len(bytes.TrimRight(b.Bytes(), "\n")))
}

// updateEvent is the event of one session update (diff names relative to
// cwd); false for the updates exec
// does not report (the mode, the slash commands, the session's title).
func updateEvent(u acpsdk.SessionUpdate, cwd string) (string, map[string]any, bool) {
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			return "message", map[string]any{"text": t.Text}, true
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			return "thought", map[string]any{"text": t.Text}, true
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		f := map[string]any{"id": tc.ToolCallId, "title": tc.Title, "kind": tc.Kind, "status": tc.Status}
		if tc.RawInput != nil {
			f["input"] = tc.RawInput
		}
		contentFields(f, tc.Content, cwd)
		return "tool_call", f, true
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		if out, ok := tu.Meta["terminal_output"].(map[string]any); ok {
			data, _ := out["data"].(string)
			return "tool_output", map[string]any{"id": tu.ToolCallId, "data": data}, true
		}
		f := map[string]any{"id": tu.ToolCallId}
		if tu.Status != nil {
			f["status"] = *tu.Status
		}
		if exit, ok := tu.Meta["terminal_exit"].(map[string]any); ok {
			if c, ok := exit["exit_code"].(float64); ok {
				f["exit_code"] = int(c)
			}
			if s, ok := exit["signal"].(string); ok && s != "" {
				f["signal"] = s
			}
		}
		if tu.RawOutput != nil {
			f["output"] = tu.RawOutput
		}
		contentFields(f, tu.Content, cwd)
		return "tool_call_update", f, true
	case u.Plan != nil:
		entries := make([]map[string]any, len(u.Plan.Entries))
		for i, e := range u.Plan.Entries {
			entries[i] = map[string]any{"step": e.Content, "status": e.Status}
		}
		return "plan", map[string]any{"entries": entries}, true
	case u.UsageUpdate != nil:
		f := map[string]any{"used": u.UsageUpdate.Used, "size": u.UsageUpdate.Size, "estimated": u.UsageUpdate.Meta["estimated"] == true}
		if c := u.UsageUpdate.Cost; c != nil {
			f["session_cost"] = map[string]any{"amount": c.Amount, "currency": c.Currency}
		}
		return "context", f, true
	}
	return "", nil, false
}

// contentFields adds a tool call's content to its event: "text" (the
// result, as the model got it), "diffs" and "changes" (what the call
// changed), "description" (why the model ran it), "command" (the whole
// command, when the title shows only its first line).
func contentFields(f map[string]any, content []acpsdk.ToolCallContent, cwd string) {
	var texts, lines []string
	var diffs []map[string]any
	body := false
	for _, c := range content {
		switch {
		case c.Terminal != nil:
			body = true
		case c.Diff != nil:
			body = true
			d := map[string]any{"path": c.Diff.Path, "new_text": c.Diff.NewText, "old_text": c.Diff.OldText}
			d["unified"] = unified(c.Diff, changeView{cwd: cwd}.rel(c.Diff.Path))
			diffs = append(diffs, d)
		case c.Content != nil && c.Content.Content.Text != nil:
			text := c.Content.Content.Text.Text
			if cmd, ok := unfenceLang(text, "sh"); ok {
				f["command"] = strings.TrimSuffix(cmd, "\n")
				continue
			}
			switch t, fenced := unfence(text); {
			case fenced:
				body = true
				texts = append(texts, t)
			case body:
				lines = append(lines, text)
			default:
				f["description"] = text
			}
		}
	}
	if len(texts) > 0 {
		f["text"] = joinTexts(texts)
	}
	if len(diffs) > 0 {
		f["diffs"] = diffs
	}
	if len(lines) > 0 {
		f["changes"] = lines
	}
}

func joinTexts(ts []string) string {
	var b bytes.Buffer
	for _, t := range ts {
		b.WriteString(t)
	}
	return b.String()
}
