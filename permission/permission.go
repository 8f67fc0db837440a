// Package permission decides, before a command runs, whether it may run
// without asking: configured deny rules veto, allow rules pass, commands the
// user allowed "always" in this session pass, everything else is asked.
//
// Matching works on the simple commands of a shell line (split at ;, &&, ||,
// | and newlines), so an allow rule for `git status` does not pass
// `git status && rm -rf ~`. A line that hides commands inside command or
// process substitution is never passed without asking.
package permission

import (
	"strings"
)

// Verdict is the outcome of a check.
type Verdict int

const (
	// Ask: nothing decided; ask the user.
	Ask Verdict = iota
	// Allow: a rule or an earlier "always" passes the command.
	Allow
	// Deny: a deny rule vetoes the command.
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "ask"
}

// Rules are prefix patterns from the command line (--allow, --deny). A
// pattern matches a simple command equal to it or starting with it followed
// by a space ("git status" matches "git status -s", not "git statusx"); a
// pattern ending in "*" matches any command that starts with the rest.
type Rules struct {
	Allow []string
	Deny  []string
}

// Decision says what was decided and why.
type Decision struct {
	Verdict Verdict
	// Rule is the pattern or remembered key that decided, if any.
	Rule string
}

// Check applies deny rules, then allow rules and remembered keys. remembered
// holds the keys (see Keys) the user allowed "always" in this session.
func (r Rules) Check(command string, remembered map[string]bool) Decision {
	parts := Split(command)
	for _, p := range parts {
		for _, pat := range r.Deny {
			if matches(pat, p) {
				return Decision{Verdict: Deny, Rule: pat}
			}
		}
	}
	if len(parts) == 0 || hasSubstitution(command) {
		return Decision{Verdict: Ask}
	}
	rule := ""
	for _, p := range parts {
		matched := ""
		for _, pat := range r.Allow {
			if matches(pat, p) {
				matched = pat
				break
			}
		}
		if matched == "" && remembered[Key(p)] {
			matched = Key(p)
		}
		if matched == "" {
			return Decision{Verdict: Ask}
		}
		if rule == "" {
			rule = matched
		}
	}
	return Decision{Verdict: Allow, Rule: rule}
}

func matches(pattern, cmd string) bool {
	pattern = strings.TrimSpace(pattern)
	if pattern == "" {
		return false
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(cmd, p)
	}
	return cmd == pattern || strings.HasPrefix(cmd, pattern+" ")
}

// subcommandTools are programs whose second word selects what they do, so
// "always allow" remembers `go test`, not every `go` command.
var subcommandTools = map[string]bool{
	"apt": true, "apt-get": true, "bazel": true, "brew": true, "bun": true,
	"cargo": true, "deno": true, "docker": true, "dotnet": true, "gh": true,
	"git": true, "go": true, "gradle": true, "helm": true, "just": true,
	"kubectl": true, "make": true, "mvn": true, "nix": true, "npm": true,
	"npx": true, "pip": true, "pip3": true, "pnpm": true, "poetry": true,
	"rustup": true, "systemctl": true, "task": true, "terraform": true,
	"uv": true, "yarn": true, "zig": true,
}

// Key is what "always allow" remembers for one simple command: its program,
// plus the subcommand for tools that have them ("go test", "git status",
// "ls"). Leading VAR=value assignments are skipped.
func Key(simple string) string {
	words := strings.Fields(simple)
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	prog := words[0]
	if subcommandTools[prog] && len(words) > 1 && !strings.HasPrefix(words[1], "-") {
		return prog + " " + words[1]
	}
	return prog
}

// Keys returns the distinct keys of every simple command in a line, in order.
func Keys(command string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, p := range Split(command) {
		k := Key(p)
		if k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for _, c := range w[:i] {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func hasSubstitution(command string) bool {
	return strings.Contains(command, "$(") || strings.Contains(command, "`") ||
		strings.Contains(command, "<(") || strings.Contains(command, ">(")
}

// Split cuts a shell line into its simple commands at unquoted ;, &, &&, ||,
// | and newlines, trimming each and dropping empty ones. Quotes are
// respected so `echo "a;b"` stays whole; leading "(" and "{" of groups are
// dropped so "(cd x && make)" yields "cd x" and "make".
func Split(command string) []string {
	var parts []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		s = strings.TrimLeft(s, "({ \t")
		s = strings.TrimSpace(strings.TrimRight(s, ")} \t"))
		if s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
	}
	var quote rune
	escaped := false
	rs := []rune(command)
	for i, c := range rs {
		switch {
		case escaped:
			escaped = false
			cur.WriteRune(c)
		case c == '\\' && quote != '\'':
			escaped = true
			cur.WriteRune(c)
		case quote != 0:
			if c == quote {
				quote = 0
			}
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote = c
			cur.WriteRune(c)
		case c == '&' && isRedirect(rs, i):
			cur.WriteRune(c)
		case c == ';' || c == '&' || c == '|' || c == '\n':
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return parts
}

// isRedirect reports whether the & at rs[i] belongs to a redirection
// (2>&1, >&2, &>file) rather than separating commands.
func isRedirect(rs []rune, i int) bool {
	if i > 0 && (rs[i-1] == '>' || rs[i-1] == '<') {
		return true
	}
	return i+1 < len(rs) && rs[i+1] == '>'
}
