package permission_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/permission"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	const key = "mcp:github/search"
	tests := []struct {
		name       string
		rules      permission.Rules
		remembered map[string]bool
		want       permission.Decision
	}{
		{name: "nothing decided", want: permission.Decision{Verdict: permission.Ask}},
		{name: "allow the tool", rules: permission.Rules{Allow: []string{key}}, want: permission.Decision{Verdict: permission.Allow, Rule: key}},
		{name: "allow the server", rules: permission.Rules{Allow: []string{"mcp:github/*"}}, want: permission.Decision{Verdict: permission.Allow, Rule: "mcp:github/*"}},
		{name: "another tool", rules: permission.Rules{Allow: []string{"mcp:github/create_issue"}}, want: permission.Decision{Verdict: permission.Ask}},
		{name: "another server", rules: permission.Rules{Allow: []string{"mcp:git/*"}}, want: permission.Decision{Verdict: permission.Ask}},
		{name: "deny wins over allow", rules: permission.Rules{Allow: []string{key}, Deny: []string{"mcp:github/*"}},
			want: permission.Decision{Verdict: permission.Deny, Rule: "mcp:github/*"}},
		{name: "deny wins over always", rules: permission.Rules{Deny: []string{key}}, remembered: map[string]bool{key: true},
			want: permission.Decision{Verdict: permission.Deny, Rule: key}},
		{name: "remembered", remembered: map[string]bool{key: true}, want: permission.Decision{Verdict: permission.Allow, Rule: key}},
		// Shell patterns never reach a tool, nor a bare "*".
		{name: "shell prefix pattern", rules: permission.Rules{Allow: []string{"m*"}, Deny: []string{"*"}}, want: permission.Decision{Verdict: permission.Ask}},
		{name: "shell command pattern", rules: permission.Rules{Deny: []string{"mcp"}}, want: permission.Decision{Verdict: permission.Ask}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.rules.CheckKey(key, tt.remembered); got != tt.want {
				t.Errorf("CheckKey(%q) = %+v, want %+v", key, got, tt.want)
			}
		})
	}
	if got := (permission.Rules{Allow: []string{"*"}}).CheckKey("no-scheme", nil); got.Verdict != permission.Ask {
		t.Errorf("a key without a scheme = %+v, want ask", got)
	}
}

func TestCheckFile(t *testing.T) {
	r := permission.Rules{Deny: []string{"edit:/p/locked/*", "git push"}, Allow: []string{"read:/usr/share/*"}}
	remembered := map[string]bool{
		permission.FilePattern(permission.EditScheme, "/p"):       true,
		permission.FilePattern(permission.ReadScheme, "/shared/"): true,
		"rm": true,
	}
	for _, tc := range []struct {
		scheme, path string
		want         permission.Verdict
	}{
		{permission.EditScheme, "/p/locked/x", permission.Deny},
		{permission.EditScheme, "/p/a.txt", permission.Allow},
		{permission.EditScheme, "/p", permission.Allow},
		{permission.EditScheme, "/pp/a.txt", permission.Ask},
		{permission.ReadScheme, "/p/a.txt", permission.Ask}, // edits remembered, not reads
		{permission.ReadScheme, "/shared", permission.Allow},
		{permission.ReadScheme, "/shared/deep/x", permission.Allow},
		{permission.ReadScheme, "/usr/share/doc/x", permission.Allow},
		{permission.EditScheme, "/usr/share/doc/x", permission.Ask},
		{permission.EditScheme, "rm", permission.Ask},
	} {
		if got := r.CheckFile(tc.scheme, tc.path, remembered).Verdict; got != tc.want {
			t.Errorf("CheckFile(%s, %s) = %v, want %v", tc.scheme, tc.path, got, tc.want)
		}
	}
}
