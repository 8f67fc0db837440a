// Package permission decides, before a command runs, whether it may run
// without asking: configured deny rules veto, allow rules pass, commands the
// user allowed "always" in this session pass, everything else is asked.
//
// Matching works on the simple commands of a shell line (split at ;, &&, ||,
// | and newlines), so an allow rule for `git status` does not pass
// `git status && rm -rf ~`. Runs of blanks count as one space and leading
// shell syntax (if, then, do, while, !, time, { …) is skipped.
//
// Allow rules and remembered keys are conservative: they pass a simple
// command only as written, never one with leading VAR=value assignments
// (PATH=… or LD_PRELOAD=… change what runs) or one that writes a file
// through a redirection (> f, >> f, &> f; 2>&1 and >/dev/null are fine),
// and never a line with command or process substitution.
//
// Deny rules are generous: a pattern matches if it matches any reading of a
// command — unquoted (\rm, "rm", r"m"), by the program's base name
// (/bin/rm), without leading assignments, without wrappers (env, command,
// exec, nice, nohup, timeout, sudo, xargs, …), and inside `bash -c`,
// `eval`, `find -exec` and substitutions. That guards against accidents
// and obvious variants, not against a determined adversary: a shell can
// always build a command the patterns do not see (variables, functions,
// scripts, `echo rm … | sh`), and there is no sandbox.
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
	if rule := newDenier(r.Deny, command).line(command, 0); rule != "" {
		return Decision{Verdict: Deny, Rule: rule}
	}
	if hasSubstitution(command) {
		return Decision{Verdict: Ask}
	}
	rule := ""
	commands := 0
	for _, p := range Split(command) {
		s := parseSimple(p)
		if s.writes() {
			return Decision{Verdict: Ask}
		}
		words := stripKeywords(s.words, false)
		if len(words) == 0 {
			continue // only syntax: "fi", "done", a for head
		}
		commands++
		canonical := joinRaw(words)
		matched := ""
		for _, pat := range r.Allow {
			if matches(pat, canonical) {
				matched = pat
				break
			}
		}
		if k := key(words); matched == "" && !isAssignment(words[0].raw) && k != "" && remembered[k] {
			matched = k
		}
		if matched == "" {
			return Decision{Verdict: Ask}
		}
		if rule == "" {
			rule = matched
		}
	}
	if commands == 0 {
		return Decision{Verdict: Ask}
	}
	return Decision{Verdict: Allow, Rule: rule}
}

// matches reports whether a pattern matches a command; runs of blanks in
// the pattern count as one space, as they do in the command forms.
func matches(pattern, cmd string) bool {
	return matchNormalised(normalise(pattern), cmd)
}

// normalise turns every run of blanks into one space and trims the ends.
func normalise(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func matchNormalised(pattern, cmd string) bool {
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
// "ls"). Leading shell keywords (if, then, do, !, time…) and VAR=value
// assignments are skipped, and so are toolchain words ("cargo +nightly
// build" is "cargo build").
func Key(simple string) string {
	return key(stripKeywords(parseSimple(simple).words, false))
}

func key(words []word) string {
	for len(words) > 0 && isAssignment(words[0].raw) {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	prog := words[0].raw
	if !subcommandTools[prog] {
		return prog
	}
	rest := words[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0].raw, "+") {
		rest = rest[1:]
	}
	if len(rest) > 0 && !strings.HasPrefix(rest[0].raw, "-") {
		return prog + " " + rest[0].raw
	}
	return prog
}

// Keys returns the distinct keys of every simple command in a line, in
// order. It returns nil when remembering them could never pass the line
// (see Check): it has a substitution, or a command has leading assignments
// or writes a file through a redirection.
func Keys(command string) []string {
	if hasSubstitution(command) {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for _, p := range Split(command) {
		s := parseSimple(p)
		words := stripKeywords(s.words, false)
		if s.writes() || len(words) > 0 && isAssignment(words[0].raw) {
			return nil
		}
		k := key(words)
		if k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// Programs returns the distinct keys of every simple command in a line, in
// order, whether or not remembering them could pass this very line (Keys
// says that).
func Programs(command string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, p := range Split(command) {
		if k := Key(p); k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func hasSubstitution(command string) bool {
	return strings.Contains(command, "$(") || strings.Contains(command, "`") ||
		strings.Contains(command, "<(") || strings.Contains(command, ">(")
}

// Split cuts a shell line into its simple commands at unquoted ;, &, &&, ||,
// | and newlines, trimming each and dropping empty ones. Quotes are
// respected so `echo "a;b"` stays whole, redirections (2>&1, &>f, >|f) are
// not cut, and a backslash-newline joins lines as in the shell. Leading "("
// and "{ " and trailing ")" and " }" of groups are dropped, so
// "(cd x && make)" yields "cd x" and "make".
func Split(command string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if s := trimGroup(string(cur)); s != "" {
			parts = append(parts, s)
		}
		cur = cur[:0]
	}
	var quote rune
	escaped := false
	// prev is the previous character if it was neither quoted nor escaped.
	var prev rune
	rs := []rune(command)
	for i, c := range rs {
		p := prev
		prev = 0
		switch {
		case escaped:
			escaped = false
			if c == '\n' {
				cur = cur[:len(cur)-1] // line continuation
				continue
			}
			cur = append(cur, c)
		case c == '\\' && quote != '\'':
			escaped = true
			cur = append(cur, c)
		case quote != 0:
			if c == quote {
				quote = 0
			}
			cur = append(cur, c)
		case c == '\'' || c == '"':
			quote = c
			cur = append(cur, c)
		case c == '&' && (p == '>' || p == '<' || i+1 < len(rs) && rs[i+1] == '>'),
			c == '|' && p == '>':
			cur = append(cur, c) // 2>&1, <&3, &>file, >|file
		case c == ';' || c == '&' || c == '|' || c == '\n':
			flush()
			prev = c
		default:
			cur = append(cur, c)
			prev = c
		}
	}
	flush()
	return parts
}

// trimGroup trims blanks and the grouping around a part: "(" and ")", and
// "{" and "}" standing as words.
func trimGroup(s string) string {
	for {
		s = strings.TrimSpace(s)
		n := len(s)
		switch {
		case n == 0:
			return s
		case s[0] == '(':
			s = s[1:]
		case s[n-1] == ')' && !strings.HasSuffix(s, "\\)"):
			s = s[:n-1]
		case s == "{" || s == "}":
			return ""
		case s[0] == '{' && isBlank(rune(s[1])):
			s = s[1:]
		case s[n-1] == '}' && isBlank(rune(s[n-2])):
			s = s[:n-1]
		default:
			return s
		}
	}
}
