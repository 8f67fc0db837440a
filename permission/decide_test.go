package permission_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TestDecide is the approval table: mode × rules × remembered answers ×
// subject, and what becomes of the call.
func TestDecide(t *testing.T) {
	t.Parallel()
	const cwd = "/work/p"
	deny := permission.Rules{Deny: []string{"rm", "mcp:evil/*", "edit:/work/p/secret/*"}}
	allow := permission.Rules{Allow: []string{"make", "mcp:files/read", "read:/etc/*"}}
	readIn := tools.Subject{Kind: tools.FileRead, Text: cwd + "/a.go", Inside: true, Dir: cwd}
	readOut := tools.Subject{Kind: tools.FileRead, Text: "/opt/x/a.go", Dir: "/opt/x"}
	editIn := tools.Subject{Kind: tools.FileWrite, Text: cwd + "/a.go", Inside: true}
	editOut := tools.Subject{Kind: tools.FileWrite, Text: "/opt/x/a.go"}
	secret := tools.Subject{Kind: tools.FileWrite, Text: cwd + "/secret/k", Inside: true}
	unknown := tools.Subject{Kind: tools.SubjectKind(99), Text: "??"}
	refused := func(what, rule string) permission.Answer {
		return permission.Answer{Action: permission.Refuse, Rule: rule,
			Message: "Error: permission denied: the " + what + " matches the deny rule \"" + rule + "\"; it was not run"}
	}
	run := permission.Answer{Action: permission.Run}
	boxed := permission.Answer{Action: permission.RunSandboxed}
	ask := func(plain bool, keys ...string) permission.Answer {
		return permission.Answer{Action: permission.AskUser, Keys: keys, Plain: plain}
	}
	tests := []struct {
		name       string
		mode       permission.Mode
		rules      permission.Rules
		remembered map[string]bool
		sub        tools.Subject
		readOnly   bool
		want       permission.Answer
	}{
		{name: "no subject runs even under a deny-all", mode: permission.ModeAsk, rules: permission.Rules{Deny: []string{"*"}}, sub: tools.Subject{}, want: run},
		{name: "a confirmation is asked in auto, with no always", mode: permission.ModeAuto, rules: permission.Rules{Allow: []string{"*"}}, remembered: map[string]bool{"*": true}, sub: tools.Subject{Kind: tools.Confirm}, want: ask(false)},
		{name: "a confirmation is asked in sandbox", mode: permission.ModeSandbox, sub: tools.Subject{Kind: tools.Confirm}, want: ask(false)},
		{name: "the user's command runs in ask", mode: permission.ModeAsk, rules: permission.Rules{Deny: []string{"*"}}, sub: tools.Subject{Kind: tools.UserCommand}, want: run},
		{name: "the user's command runs confined in sandbox", mode: permission.ModeSandbox, sub: tools.Subject{Kind: tools.UserCommand}, want: boxed},
		{name: "deny vetoes in ask", mode: permission.ModeAsk, rules: deny, sub: tools.Shell("rm -rf x"), want: refused("command", "rm")},
		{name: "deny vetoes in sandbox", mode: permission.ModeSandbox, rules: deny, sub: tools.Shell("rm -rf x"), want: refused("command", "rm")},
		{name: "deny vetoes in auto", mode: permission.ModeAuto, rules: deny, sub: tools.Shell("ls; rm x"), want: refused("command", "rm")},
		{name: "deny beats remembered", mode: permission.ModeAsk, rules: deny, remembered: map[string]bool{"rm": true}, sub: tools.Shell("rm x"), want: refused("command", "rm")},
		{name: "deny vetoes a tool", mode: permission.ModeAuto, rules: deny, sub: tools.Key("mcp:evil/x"), want: refused("tool call", "mcp:evil/*")},
		{name: "deny vetoes a path", mode: permission.ModeSandbox, rules: deny, sub: secret, want: refused("path "+cwd+"/secret/k", "edit:/work/p/secret/*")},
		{name: "allow rule runs", mode: permission.ModeAsk, rules: allow, sub: tools.Shell("make test"), want: permission.Answer{Action: permission.Run, Rule: "make"}},
		{name: "remembered runs", mode: permission.ModeAsk, remembered: map[string]bool{"go test": true}, sub: tools.Shell("go test ./..."), want: permission.Answer{Action: permission.Run, Rule: "go test"}},
		{name: "remembered tool runs", mode: permission.ModeAsk, remembered: map[string]bool{"mcp:f/r": true}, sub: tools.Key("mcp:f/r"), want: permission.Answer{Action: permission.Run, Rule: "mcp:f/r"}},
		{name: "remembered directory passes a read in it", mode: permission.ModeAsk, remembered: map[string]bool{"read:/opt/x/*": true}, sub: readOut, want: permission.Answer{Action: permission.Run, Rule: "read:/opt/x/*"}},
		{name: "ask asks a command with its keys", mode: permission.ModeAsk, sub: tools.Shell("go test ./... && git status"), want: ask(false, "go test", "git status")},
		{name: "ask asks a risky line with its plain programs", mode: permission.ModeAsk, sub: tools.Shell("FOO=1 make > out"), want: ask(true, "make")},
		{name: "sandbox confines a command", mode: permission.ModeSandbox, sub: tools.Shell("curl x | sh"), want: boxed},
		{name: "sandbox confines an allowed command too", mode: permission.ModeSandbox, rules: allow, sub: tools.Shell("make"), want: boxed},
		{name: "sandbox confines a read outside", mode: permission.ModeSandbox, sub: readOut, want: boxed},
		{name: "sandbox confines an edit", mode: permission.ModeSandbox, sub: editOut, want: boxed},
		{name: "sandbox asks a tool, which cannot be confined", mode: permission.ModeSandbox, sub: tools.Key("mcp:f/w"), want: ask(false, "mcp:f/w")},
		{name: "sandbox runs an allowed tool", mode: permission.ModeSandbox, rules: allow, sub: tools.Key("mcp:files/read"), want: permission.Answer{Action: permission.Run, Rule: "mcp:files/read"}},
		{name: "auto runs a command", mode: permission.ModeAuto, sub: tools.Shell("curl x | sh"), want: run},
		{name: "auto runs a tool", mode: permission.ModeAuto, sub: tools.Key("mcp:f/w"), want: run},
		{name: "a read inside runs in ask", mode: permission.ModeAsk, sub: readIn, want: run},
		{name: "a read outside asks for its directory", mode: permission.ModeAsk, sub: readOut, want: ask(false, "read:/opt/x/*")},
		{name: "an edit inside asks for the session's directory", mode: permission.ModeAsk, sub: editIn, want: ask(false, "edit:/work/p/*")},
		{name: "an edit outside asks with no always", mode: permission.ModeAsk, sub: editOut, want: ask(false)},
		{name: "a read-only tool runs when allowed", mode: permission.ModeAsk, sub: tools.Key("mcp:f/r"), readOnly: true, want: run},
		{name: "a read-only tool is still denied", mode: permission.ModeAsk, rules: deny, sub: tools.Key("mcp:evil/r"), readOnly: true, want: refused("tool call", "mcp:evil/*")},
		{name: "read-only says nothing of a command", mode: permission.ModeAsk, sub: tools.Shell("make"), readOnly: true, want: ask(false, "make")},
		{name: "an unknown subject is asked in auto, with no always", mode: permission.ModeAuto, sub: unknown, want: permission.Answer{Action: permission.AskUser, Unknown: true}},
		{name: "an unknown subject is asked in sandbox", mode: permission.ModeSandbox, rules: allow, sub: unknown, want: permission.Answer{Action: permission.AskUser, Unknown: true}},
		{name: "a substitution is asked though allowed", mode: permission.ModeAsk, rules: permission.Rules{Allow: []string{"make"}}, sub: tools.Shell("make > out"), want: ask(true, "make")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := permission.Decide(permission.Question{Mode: tc.mode, Rules: tc.rules, Remembered: tc.remembered, Subject: tc.sub, ReadOnly: tc.readOnly, Cwd: cwd})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
