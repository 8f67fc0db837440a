package tools

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible returns s with every character that a terminal or an editor would
// not show as itself made visible, so nothing in a command can hide part of
// it from the person deciding on it: a carriage return or an escape sequence
// would overwrite what was shown, a bidirectional control would reorder it,
// a zero-width character would hide a difference. Line feeds and tabs stay
// as they are (they show as themselves). A C0 control becomes its Unicode
// control picture (␍ for a carriage return, ␛ for escape), DEL ␡; any other
// invisible character — a C1 control, a format character such as U+202E, a
// line or paragraph separator — becomes ⟨U+202E⟩, and a byte that is not
// UTF-8 ⟨\xff⟩.
func Visible(s string) string {
	if !needsVisible(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "⟨\\x%02x⟩", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('␡')
		case hidden(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsVisible(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || hidden(r) {
			return true
		}
		i += size
	}
	return false
}

// hidden: a character above ASCII that shows as nothing, or moves or breaks
// what is around it.
func hidden(r rune) bool {
	return r >= 0x80 && (unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp))
}
