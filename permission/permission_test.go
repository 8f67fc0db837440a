package permission_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/permission"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"single", "go test ./...", []string{"go test ./..."}},
		{"and", "git status && rm -rf ~", []string{"git status", "rm -rf ~"}},
		{"pipe and redirect", "go test ./... 2>&1 | tail -5", []string{"go test ./... 2>&1", "tail -5"}},
		{"amp redirect", "make &>log; echo done", []string{"make &>log", "echo done"}},
		{"quoted separators", `echo "a;b|c" 'd&&e'`, []string{`echo "a;b|c" 'd&&e'`}},
		{"escaped", `echo a\;b`, []string{`echo a\;b`}},
		{"group", "(cd x && make)", []string{"cd x", "make"}},
		{"newlines", "ls\npwd\n", []string{"ls", "pwd"}},
		{"background", "sleep 1 & echo hi", []string{"sleep 1", "echo hi"}},
		{"empty", "  ", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, permission.Split(tc.in)); diff != "" {
				t.Errorf("Split(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"go test ./...":         "go test",
		"git status -s":         "git status",
		"git -C x status":       "git",
		"ls -la":                "ls",
		"FOO=1 BAR=2 npm run x": "npm run",
		"cat README.md":         "cat",
		"./build.sh --fast":     "./build.sh",
		"":                      "",
	}
	for in, want := range cases {
		if got := permission.Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
	if diff := cmp.Diff([]string{"go build", "go test"}, permission.Keys("go build ./... && go test ./... && go test -race ./...")); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{
		Allow: []string{"git status", "ls", "echo*"},
		Deny:  []string{"rm -rf", "git push"},
	}
	cases := []struct {
		name       string
		cmd        string
		remembered map[string]bool
		want       permission.Verdict
		rule       string
	}{
		{"allow exact", "git status", nil, permission.Allow, "git status"},
		{"allow with args", "git status -s", nil, permission.Allow, "git status"},
		{"word boundary", "git statusx", nil, permission.Ask, ""},
		{"star prefix", "echoing", nil, permission.Allow, "echo*"},
		{"deny wins over allow", "ls && rm -rf /tmp/x", nil, permission.Deny, "rm -rf"},
		{"deny in pipeline", "git push origin main | cat", nil, permission.Deny, "git push"},
		{"compound needs every part", "ls && make", nil, permission.Ask, ""},
		{"compound all allowed", "ls; git status", nil, permission.Allow, "ls"},
		{"remembered key", "go test -run X ./...", map[string]bool{"go test": true}, permission.Allow, "go test"},
		{"remembered key is not another subcommand", "go build ./...", map[string]bool{"go test": true}, permission.Ask, ""},
		{"substitution never auto-allowed", "ls $(rm -rf ~)", nil, permission.Ask, ""},
		{"backticks never auto-allowed", "echo `id`", nil, permission.Ask, ""},
		{"unknown asks", "make", nil, permission.Ask, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, tc.remembered)
			if got.Verdict != tc.want || got.Rule != tc.rule {
				t.Errorf("Check(%q) = %v %q, want %v %q", tc.cmd, got.Verdict, got.Rule, tc.want, tc.rule)
			}
		})
	}
}
