package execclient

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	acpsdk "github.com/coder/acp-go-sdk"
)

// maxDiffLines is the longest diff exec prints of one file; past it, the
// file gets the one-line summary a terminal can take in.
const maxDiffLines = 400

const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// changeView renders what a call changed, from the content the agent sent
// the editor: a unified diff per text file, the agent's own line for a
// binary or large file ("<path>: binary file changed", "<path>: 300 KiB →
// 310 KiB"). Paths are shown relative to cwd when under it.
type changeView struct {
	cwd   string
	color bool
}

// render is the text of content's changes; "" when it has none. Text
// blocks count as change lines only after the call's body (its fenced
// text or terminal): before it is the call's description.
func (v changeView) render(content []acpsdk.ToolCallContent) string {
	var b strings.Builder
	body := false
	for _, c := range content {
		switch {
		case c.Terminal != nil:
			body = true
		case c.Diff != nil:
			body = true
			b.WriteString(v.diff(c.Diff))
		case c.Content != nil && c.Content.Content.Text != nil:
			text := c.Content.Content.Text.Text
			if _, fenced := unfence(text); fenced {
				body = true
				continue
			}
			if body {
				b.WriteString(v.paint(ansiCyan, v.rel(text)) + "\n")
			}
		}
	}
	return b.String()
}

// diff is one file's unified diff, or its summary when it is too long to
// read on a terminal.
func (v changeView) diff(d *acpsdk.ToolCallContentDiff) string {
	name := v.rel(d.Path)
	u := unified(d, name)
	if u == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimSuffix(u, "\n"), "\n")
	added, removed := 0, 0
	for _, l := range lines[2:] {
		switch {
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	if len(lines) > maxDiffLines {
		return v.paint(ansiCyan, fmt.Sprintf("%s: +%d −%d lines (a diff of %d lines, not shown)", name, added, removed, len(lines))) + "\n"
	}
	var b strings.Builder
	for _, l := range lines {
		text := strings.TrimSuffix(l, "\n")
		switch {
		case strings.HasPrefix(text, "---") || strings.HasPrefix(text, "+++"):
			text = v.paint(ansiBold, text)
		case strings.HasPrefix(text, "@@"):
			text = v.paint(ansiCyan, text)
		case strings.HasPrefix(text, "+"):
			text = v.paint(ansiGreen, text)
		case strings.HasPrefix(text, "-"):
			text = v.paint(ansiRed, text)
		}
		b.WriteString(text + "\n")
	}
	return b.String()
}

// unified is d as a unified diff, the file called name (a/name, b/name;
// /dev/null before a new file); "" when nothing differs.
func unified(d *acpsdk.ToolCallContentDiff, name string) string {
	from, old := "a/"+name, ""
	if d.OldText == nil {
		from = "/dev/null"
	} else {
		old = *d.OldText
	}
	return udiff.Unified(from, "b/"+name, old, d.NewText)
}

// rel shortens the paths under cwd, in a path or a line starting with one.
func (v changeView) rel(s string) string {
	if v.cwd == "" {
		return s
	}
	prefix := strings.TrimSuffix(v.cwd, string(filepath.Separator)) + string(filepath.Separator)
	return strings.ReplaceAll(s, prefix, "")
}

func (v changeView) paint(code, s string) string {
	if !v.color {
		return s
	}
	return code + s + ansiReset
}
