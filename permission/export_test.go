package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Key (for tests only) is what "always allow" remembers for one simple
// command: its program, plus the subcommand for tools that have them ("go
// test", "git status", "ls"). Leading shell keywords (if, then, do, !, time…) and VAR=value
// assignments are skipped, and so are toolchain words ("cargo +nightly
// build" is "cargo build").
func Key(simple string) string {
	// A part of a line may start with a keyword whose compound the part
	// does not hold ("then go test"): drop such words until it parses.
	for range 8 {
		f, err := parseRecovering(simple)
		first, rest, _ := strings.Cut(strings.TrimSpace(simple), " ")
		if err == nil || !syntax.IsKeyword(first) {
			if cs := read(simple, f).commands; len(cs) > 0 {
				return key(cs[0].words)
			}
			return ""
		}
		simple = rest
	}
	return ""
}
