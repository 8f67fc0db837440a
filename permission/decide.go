package permission

import (
	"fmt"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Mode is a session's permission mode.
type Mode string

const (
	// ModeAsk asks before each command unless a rule allows it; what
	// runs, runs unconfined (the user saw it, or a rule named it).
	ModeAsk Mode = "ask"
	// ModeSandbox runs commands without asking, confined to the sandbox
	// (deny rules still apply).
	ModeSandbox Mode = "sandbox"
	// ModeAuto (Full access) runs commands without asking and unconfined
	// (deny rules still apply). The id predates ModeSandbox and is kept so
	// that settings users wrote keep their meaning.
	ModeAuto Mode = "auto"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeAsk || m == ModeAuto || m == ModeSandbox }

// Action is what becomes of a call.
type Action int

const (
	// AskUser: nothing decided it; the user is asked.
	AskUser Action = iota
	// Run: the call runs, unconfined.
	Run
	// RunSandboxed: the call runs without asking, confined.
	RunSandboxed
	// Refuse: a deny rule vetoes the call; Answer.Message tells the model.
	Refuse
)

func (a Action) String() string {
	switch a {
	case Run:
		return "run"
	case RunSandboxed:
		return "run sandboxed"
	case Refuse:
		return "refuse"
	}
	return "ask"
}

// Question is everything the decision about one call reads.
type Question struct {
	Mode  Mode
	Rules Rules
	// Remembered are the keys "always" answers allowed: the session's and
	// its project's.
	Remembered map[string]bool
	Subject    tools.Subject
	// ReadOnly: the call is of a tool its server annotates read-only and
	// such tools may run in Ask mode without asking (--allow-mcp-readonly).
	ReadOnly bool
	// Cwd is the session's directory: an "always" answer about an edit
	// inside it remembers all of it.
	Cwd string
}

// Answer is the decision about one call.
type Answer struct {
	Action Action
	// Rule is the rule or remembered key that decided, if any.
	Rule string
	// Message is what the model is told of a refused call.
	Message string
	// Keys are what an "always" answer to AskUser remembers; none offers
	// no "always".
	Keys []string
	// Plain: Keys are the programs of a line that "always" will not pass
	// as written (it sets variables, writes files, substitutes…): only
	// plain commands of those programs.
	Plain bool
	// Unknown: no rule can read the subject.
	Unknown bool
}

// Decide decides what becomes of a call from its approval subject alone:
// deny rules veto in every mode; mode sandbox runs commands and file
// operations confined; allow rules and remembered keys pass; mode auto
// passes; a read inside the session's directory and a read-only tool (when
// allowed) pass; everything else is asked. A call without a subject (it
// touches only what the session owns, or will not run) always runs; a
// subject no rule reads is asked in every mode, with no "always".
func Decide(q Question) Answer {
	sub := q.Subject
	var d Decision
	switch sub.Kind {
	case tools.NoApproval:
		return Answer{Action: Run}
	case tools.Confirm:
		// Asked in every mode, whatever the rules say, with no "always".
		return Answer{Action: AskUser}
	case tools.UserCommand:
		// What the user asked for runs, confined where commands are.
		if q.Mode == ModeSandbox {
			return Answer{Action: RunSandboxed}
		}
		return Answer{Action: Run}
	case tools.ShellCommand:
		d = q.Rules.Check(sub.Text, q.Remembered)
	case tools.ToolKey:
		d = q.Rules.CheckKey(sub.Text, q.Remembered)
	case tools.FileRead, tools.FileWrite:
		d = q.Rules.CheckFile(fileScheme(sub), sub.Text, q.Remembered)
	default:
		return Answer{Action: AskUser, Unknown: true}
	}
	// An MCP tool cannot be confined (its server is the editor's): in
	// sandbox mode it is decided as in Ask.
	confinable := sub.Kind == tools.ShellCommand || sub.Kind == tools.FileRead || sub.Kind == tools.FileWrite
	switch {
	case d.Verdict == Deny:
		return Answer{Action: Refuse, Rule: d.Rule,
			Message: fmt.Sprintf("Error: permission denied: the %s matches the deny rule %q; it was not run", deniedWhat(sub), d.Rule)}
	case q.Mode == ModeSandbox && confinable:
		return Answer{Action: RunSandboxed}
	case d.Verdict == Allow:
		return Answer{Action: Run, Rule: d.Rule}
	case q.Mode == ModeAuto:
		return Answer{Action: Run}
	case sub.Kind == tools.FileRead && sub.Inside:
		// Reading the session's own directory is what it is for.
		return Answer{Action: Run}
	case sub.Kind == tools.ToolKey && q.ReadOnly:
		return Answer{Action: Run}
	}
	keys, plain := alwaysKeys(sub, q.Cwd)
	return Answer{Action: AskUser, Keys: keys, Plain: plain}
}

// alwaysKeys are what an "always" answer about sub remembers: a command
// line's keys (or, when it has none, its programs, plain), a tool's key, a
// read's directory, an edit's session directory (the root it is in: the
// cwd or another of the session's roots); none for an edit outside them,
// which is asked each time.
func alwaysKeys(sub tools.Subject, cwd string) (keys []string, plain bool) {
	switch sub.Kind {
	case tools.FileWrite:
		if sub.Inside {
			root := sub.Root
			if root == "" {
				root = cwd
			}
			return []string{FilePattern(EditScheme, root)}, false
		}
		return nil, false
	case tools.FileRead:
		return []string{FilePattern(ReadScheme, sub.Dir)}, false
	case tools.ToolKey:
		return []string{sub.Text}, false
	}
	if keys = Keys(sub.Text); len(keys) > 0 {
		return keys, false
	}
	return Programs(sub.Text), true
}

// deniedWhat names the subject in a deny message.
func deniedWhat(sub tools.Subject) string {
	switch sub.Kind {
	case tools.ShellCommand:
		return "command"
	case tools.FileRead, tools.FileWrite:
		return "path " + sub.Text
	}
	return "tool call"
}

// fileScheme is the rules' scheme of a file tool's subject.
func fileScheme(sub tools.Subject) string {
	if sub.Kind == tools.FileWrite {
		return EditScheme
	}
	return ReadScheme
}
