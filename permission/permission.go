// Package permission decides, before a command runs, whether it may run
// without asking: configured deny rules veto, allow rules pass, commands the
// user allowed "always" in this session pass, everything else is asked.
//
// Matching works on the simple commands of a shell line as a bash parser
// (mvdan.cc/sh) reads it — in lists, pipelines, compound commands, groups,
// function bodies and substitutions — so an allow rule for `git status`
// does not pass `git status && rm -rf ~`. Runs of blanks count as one space
// and shell syntax (if, then, do, !, time, { …) is not part of a command.
//
// Allow rules and remembered keys are conservative: they pass a simple
// command only as written, never one with leading VAR=value assignments
// (PATH=… or LD_PRELOAD=… change what runs) or one that writes a file
// through a redirection (> f, >> f, &> f; 2>&1 and >/dev/null are fine),
// and never a line with command or process substitution (even quoted), a here-document,
// a function definition, coproc, case, a declaration or arithmetic (see
// read), nor a line the parser cannot read.
//
// Deny rules are generous: a pattern matches if it matches any reading of a
// command — unquoted (\rm, "rm", r"m", $'\x72m'), by the program's base name
// (/bin/rm), brace-expanded, without leading assignments, without wrappers
// (env, command, exec, nice, nohup, timeout, sudo, xargs, …), and inside
// `bash -c`, `eval`, `find -exec`, substitutions and here-document bodies.
// A line the parser cannot read is matched at every word. That guards
// against accidents and obvious variants, not against a determined
// adversary: a shell can always build a command the patterns do not see
// (variables, scripts, `echo rm … | sh`), and there is no sandbox.
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
// holds the keys (see Keys) the user allowed "always" in this session. The
// line is parsed once; a line that is not valid shell is never allowed,
// though deny rules still check what can be read of it.
func (r Rules) Check(command string, remembered map[string]bool) Decision {
	f, err := parse(command)
	if rule := newDenier(r.Deny, command).check(command, f, err, 0, true); rule != "" {
		return Decision{Verdict: Deny, Rule: rule}
	}
	if err != nil {
		return Decision{Verdict: Ask}
	}
	rd := read(command, f)
	if rd.unsafe != "" || len(rd.commands) == 0 {
		return Decision{Verdict: Ask}
	}
	rule := ""
	for _, c := range rd.commands {
		matched := r.allowRule(c.canonical())
		if k := key(c.words); matched == "" && len(c.assigns) == 0 && k != "" && remembered[k] {
			matched = k
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

func (r Rules) allowRule(canonical string) string {
	for _, pat := range r.Allow {
		if matches(pat, canonical) {
			return pat
		}
	}
	return ""
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
// (see Check): it does not parse, it has a substitution, a file write, a
// here-document or another construct allow rules never pass, or a command
// has leading assignments.
func Keys(command string) []string {
	f, err := parse(command)
	if err != nil {
		return nil
	}
	rd := read(command, f)
	if rd.unsafe != "" {
		return nil
	}
	for _, c := range rd.commands {
		if len(c.assigns) > 0 {
			return nil
		}
	}
	return distinctKeys(rd.commands)
}

// Programs returns the distinct keys of every simple command in a line, in
// order, whether or not remembering them could pass this very line (Keys
// says that). Commands inside substitutions are not among them.
func Programs(command string) []string {
	f, err := parse(command)
	if err != nil {
		if g, gerr := parseRecovering(command); gerr == nil {
			f = g
		}
	}
	return distinctKeys(read(command, f).commands)
}

func distinctKeys(cs []command) []string {
	var keys []string
	seen := map[string]bool{}
	for _, c := range cs {
		if k := key(c.words); k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}
