package bashtool

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTitleRunes bounds a command title: an editor shows it on one line, and a
// pasted script would otherwise fill the panel.
const maxTitleRunes = 500

// ACP tool kinds.
const (
	kindExecute = "execute"
	kindRead    = "read"
	kindOther   = "other"
)

// commandTitle renders a command on one line: each line break, with the
// blanks around it, becomes one space, other control characters become
// spaces, and a long command keeps its head and ends in an ellipsis.
func commandTitle(cmd string) string {
	var b strings.Builder
	pendingBreak := false
	for _, r := range strings.TrimSpace(cmd) {
		switch {
		case r == '\n' || r == '\r':
			pendingBreak = true
			continue
		case pendingBreak && (r == ' ' || r == '\t'):
			continue
		}
		if pendingBreak {
			trimTrailingBlanks(&b)
			b.WriteByte(' ')
			pendingBreak = false
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	title := b.String()
	if utf8.RuneCountInString(title) <= maxTitleRunes {
		return title
	}
	runes := []rune(title)
	return strings.TrimRight(string(runes[:maxTitleRunes-1]), " ") + "…"
}

func trimTrailingBlanks(b *strings.Builder) {
	s := strings.TrimRight(b.String(), " \t")
	if len(s) == b.Len() {
		return
	}
	b.Reset()
	b.WriteString(s)
}

func outputTitle(id string) string {
	if id == "" {
		return "Read output from background task"
	}
	return "Read output from background task " + id
}

func killTitle(id string) string {
	if id == "" {
		return "Kill background task"
	}
	return "Kill background task " + id
}
