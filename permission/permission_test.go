package permission_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/permission"
)

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
		"cargo +nightly build":  "cargo build",
		"cargo +nightly":        "cargo",
		"rustup +stable target": "rustup target",
		"then go test ./...":    "go test",
		"time -p ls -la":        "ls",
		"! git diff --quiet":    "git diff",
		"ls\t-la":               "ls",
		"go test>out":           "go test",
		"go test ./... 2>&1":    "go test",
		"for x in a b":          "",
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

func TestKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"subcommands", "go test ./... && git status", []string{"go test", "git status"}},
		{"plain", "ls -la", []string{"ls"}},
		{"keywords skipped", "if true; then ls; fi", []string{"true", "ls"}},
		{"fd duplication is fine", "go test ./... 2>&1 | tail -5", []string{"go test", "tail"}},
		{"dev null is fine", "ls 2>/dev/null", []string{"ls"}},
		{"input redirection is fine", "wc -l < go.mod", []string{"wc"}},
		{"assignment is never remembered", "PATH=/tmp/evil:$PATH ls", nil},
		{"assignment in one part", "ls && CGO_ENABLED=0 go build", nil},
		{"file write is never remembered", "ls -la > /tmp/x", nil},
		{"substitution is never remembered", "echo $(id)", nil},
		{"only syntax", "done", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, permission.Keys(tc.in)); diff != "" {
				t.Errorf("Keys(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
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
		{"deny sees into substitution", "ls $(rm -rf ~)", nil, permission.Deny, "rm -rf"},
		{"substitution never auto-allowed", "ls $(id)", nil, permission.Ask, ""},
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

// TestDenySeesThrough: --deny rm catches the obvious ways of spelling and
// wrapping rm.
func TestDenySeesThrough(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"rm", "ls", "echo*"}, Deny: []string{"rm"}}
	cases := []struct{ name, cmd string }{
		{"plain", "rm -f V"},
		{"tab", "rm\t-f V"},
		{"blanks", "  rm  \t -f V  "},
		{"if then", "if true; then rm -f V; fi"},
		{"if condition", "if rm -f V; then :; fi"},
		{"else", "if false; then :; else rm -f V; fi"},
		{"while", "while rm -f V; do break; done"},
		{"until", "until rm -f V; do :; done"},
		{"for do", "for i in 1; do rm -f V; done"},
		{"for without in", "for i do rm -f V; done"},
		{"case clause", "case x in x) rm -f V;; esac"},
		{"case second clause", "case x in a) :;; *) rm -f V;; esac"},
		{"subshell in if", "if (rm -f V); then :; fi"},
		{"subshell", "(rm -f V)"},
		{"subshell with redirect", "(rm -f V ) 2>/dev/null"},
		{"brace group", "{ rm -f V; }"},
		{"function body", "f() { rm -f V; }; f"},
		{"function keyword", "function f { rm -f V; }"},
		{"bang", "! rm -f V"},
		{"time", "time rm -f V"},
		{"time -p", "time -p rm -f V"},
		{"coproc", "coproc rm -f V"},
		{"assignment", "X=1 rm -f V"},
		{"quoted assignment", `X="a b" rm -f V`},
		{"append assignment", "PATH+=:/x rm -f V"},
		{"absolute path", "/bin/rm -f V"},
		{"relative path", "./rm -f V"},
		{"backslash", `\rm -f V`},
		{"double quotes", `"rm" -f V`},
		{"single quotes", "'rm' -f V"},
		{"empty quotes inside", "r''m -f V"},
		{"ansi-c quotes", `$'\x72m' -f V`},
		{"line continuation", "r\\\nm -f V"},
		{"brace expansion", "{rm,-f,V}"},
		{"brace expansion suffix", "r{m,} -f V"},
		{"redirect first", ">/dev/null rm -f V"},
		{"command", "command rm -f V"},
		{"command -p", "command -p rm -f V"},
		{"builtin", "builtin rm -f V"},
		{"env", "env rm -f V"},
		{"env assignment", "env FOO=1 rm -f V"},
		{"env options", "env -i -u HOME FOO=1 rm -f V"},
		{"env split string", `env -S "rm -f V"`},
		{"env split string after options", `env -u HOME -S"rm -f V"`},
		{"exec", "exec rm -f V"},
		{"exec -a", "exec -a name rm -f V"},
		{"nice", "nice rm -f V"},
		{"nice -n", "nice -n 5 rm -f V"},
		{"nice -N", "nice -5 rm -f V"},
		{"nohup", "nohup rm -f V"},
		{"timeout", "timeout 5 rm -f V"},
		{"timeout -s", "timeout -s KILL 5 rm -f V"},
		{"timeout long", "timeout --signal=KILL --kill-after 1 5s rm -f V"},
		{"usr bin time", "/usr/bin/time -f %e rm -f V"},
		{"sudo", "sudo rm -f V"},
		{"sudo -u", "sudo -u root -- rm -f V"},
		{"sudo assignment", "sudo FOO=1 rm -f V"},
		{"doas", "doas -u root rm -f V"},
		{"xargs", "echo V | xargs rm"},
		{"xargs -0", "printf 'V\\0' | xargs -0 rm"},
		{"xargs -I", "echo V | xargs -I {} rm {}"},
		{"stdbuf", "stdbuf -oL rm -f V"},
		{"ionice", "ionice -c 3 rm -f V"},
		{"chrt", "chrt -f 10 rm -f V"},
		{"taskset", "taskset -c 0 rm -f V"},
		{"setsid", "setsid rm -f V"},
		{"unbuffer", "unbuffer rm -f V"},
		{"busybox", "busybox rm -f V"},
		{"wrapper chain", "sudo env X=1 nice -n 5 nohup /bin/rm -f V"},
		{"bash -c", `bash -c "rm -f V"`},
		{"sh -c single quotes", "sh -c 'rm x'"},
		{"bash -lc", `bash -lc "ls; rm -f V"`},
		{"bash -e -c", `bash -e -o pipefail -c "rm -f V"`},
		{"zsh -c", `zsh -c "rm -f V"`},
		{"dash path", `/bin/dash -c "rm -f V"`},
		{"nested shells", `bash -c "sh -c 'rm -f V'"`},
		{"xargs sh -c", `echo V | xargs sh -c 'rm "$@"' _`},
		{"eval", "eval rm -f V"},
		{"eval quoted", `eval "rm -f V"`},
		{"eval compound", `eval "ls && rm -f V"`},
		{"su -c", `su -c "rm -f V" root`},
		{"find -exec", `find . -name V -exec rm {} \;`},
		{"find -execdir", "find . -execdir rm {} +"},
		{"watch", "watch -n 1 rm -f V"},
		{"command substitution", "echo $(rm -f V)"},
		{"backticks", "echo `rm -f V`"},
		{"process substitution", "cat <(rm -f V)"},
		{"substitution in quotes", `echo "$(rm -f V)"`},
		{"substitution in assignment", "X=$(rm -f V)"},
		{"chained", "ls && rm -f V"},
		{"background", "ls & rm -f V"},
		{"escaped redirect then background", `echo \>&rm -f V`},
		{"newline", "ls\nrm -f V"},
		{"long wrapper chain", strings.Repeat("sudo nice -n 5 ", 40) + "rm -f V"},
		{"nesting beyond the bound is denied", strings.Repeat("eval ", 20) + "ls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, map[string]bool{"rm": true})
			if got.Verdict != permission.Deny || got.Rule != "rm" {
				t.Errorf("Check(%q) = %v %q, want deny \"rm\"", tc.cmd, got.Verdict, got.Rule)
			}
		})
	}
}

// TestDenyDoesNotOverreach: deny matching still needs the pattern at a
// program position.
func TestDenyDoesNotOverreach(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"echo", "ls", "grep"}, Deny: []string{"rm", "git push"}}
	cases := []struct {
		name string
		cmd  string
		want permission.Verdict
		rule string
	}{
		{"argument", "echo rm -f V", permission.Allow, "echo"},
		{"quoted argument", `echo "rm -f V"`, permission.Allow, "echo"},
		{"word boundary", "rmdir x", permission.Ask, ""},
		{"grep pattern", "grep -r 'rm -f' .", permission.Allow, "grep"},
		{"other subcommand", "git pull", permission.Ask, ""},
		{"wrapped other subcommand", "sudo git pull", permission.Ask, ""},
		{"wrapped denied subcommand", "sudo git push", permission.Deny, "git push"},
		{"quoted denied subcommand", `git "push" origin`, permission.Deny, "git push"},
		{"pattern blanks", "git  push", permission.Deny, "git push"},
		{"nesting within the bound", strings.Repeat("eval ", 10) + "ls", permission.Ask, ""},
		{"heredoc lines read as commands (errs towards deny)", "cat <<EOF\nrm -f V\nEOF", permission.Deny, "rm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, nil)
			if got.Verdict != tc.want || got.Rule != tc.rule {
				t.Errorf("Check(%q) = %v %q, want %v %q", tc.cmd, got.Verdict, got.Rule, tc.want, tc.rule)
			}
		})
	}
}

// TestAllowAndRememberedAreConservative: allow rules and remembered keys
// pass a command only as written: no assignments, no wrappers, no file
// writes.
func TestAllowAndRememberedAreConservative(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"ls", "git status", "echo*", "true", "nohup"}}
	remembered := map[string]bool{"go test": true, "cat": true, "cargo build": true}
	cases := []struct {
		name string
		cmd  string
		want permission.Verdict
		rule string
	}{
		// Leading assignments.
		{"remembered with PATH", "PATH=/tmp/evil:$PATH cat x", permission.Ask, ""},
		{"remembered with LD_PRELOAD", "LD_PRELOAD=/x.so cat x", permission.Ask, ""},
		{"remembered with BASH_ENV", "BASH_ENV=/x go test ./...", permission.Ask, ""},
		{"remembered with quoted assignment", `GOFLAGS="-exec=/x" go test ./...`, permission.Ask, ""},
		{"allow with PATH", "PATH=/tmp/evil:$PATH ls", permission.Ask, ""},
		{"allow with LD_PRELOAD", "LD_PRELOAD=/x.so ls -la", permission.Ask, ""},
		{"assignment after keyword", "if true; then PATH=/x ls; fi", permission.Ask, ""},
		// Wrappers are not seen through to pass.
		{"wrapper not passed by allow of its command", "nice ls", permission.Ask, ""},
		{"nohup allow passes only nohup itself", "nohup", permission.Allow, "nohup"},
		{"env not passed", "env ls", permission.Ask, ""},
		{"shell string not passed", `bash -c "ls"`, permission.Ask, ""},
		{"quoted program not passed", `"ls" -la`, permission.Ask, ""},
		// Output redirections.
		{"redirect", "ls -la > /tmp/x", permission.Ask, ""},
		{"redirect glued", "ls>/tmp/x", permission.Ask, ""},
		{"stderr to file", "ls 2>file", permission.Ask, ""},
		{"append", "ls >> ~/.bashrc", permission.Ask, ""},
		{"clobber", "ls >| x", permission.Ask, ""},
		{"both to file", "ls &> x", permission.Ask, ""},
		{"both append", "ls &>> x", permission.Ask, ""},
		{"gt amp file", "ls >& x", permission.Ask, ""},
		{"read write", "ls <> x", permission.Ask, ""},
		{"named fd", "ls {fd}> x", permission.Ask, ""},
		{"redirect first", "> ~/.bashrc ls", permission.Ask, ""},
		{"redirect alone", "ls; > ~/.bashrc", permission.Ask, ""},
		{"redirect after keyword", "if true; then ls; fi > x", permission.Ask, ""},
		{"remembered redirect", "go test ./... > out.txt", permission.Ask, ""},
		{"star rule redirect", "echo hi > ~/.profile", permission.Ask, ""},
		{"fd dup", "ls 2>&1", permission.Allow, "ls"},
		{"fd dup to stderr", "ls >&2", permission.Allow, "ls"},
		{"fd dup 1 to 2", "echo x 1>&2", permission.Allow, "echo*"},
		{"close fd", "ls 2>&-", permission.Allow, "ls"},
		{"dev null", "ls >/dev/null", permission.Allow, "ls"},
		{"stderr dev null", "ls 2> /dev/null", permission.Allow, "ls"},
		{"both dev null", "ls &>/dev/null", permission.Allow, "ls"},
		{"quoted gt is an argument", "echo '>' x", permission.Allow, "echo*"},
		{"escaped gt is an argument", `echo \> x`, permission.Allow, "echo*"},
		{"input", "cat < go.mod", permission.Allow, "cat"},
		{"heredoc", "cat <<'EOF'\nEOF", permission.Ask, ""},
		{"herestring", "cat <<< hi", permission.Allow, "cat"},
		// Normalised forms pass.
		{"tab", "ls\t-la", permission.Allow, "ls"},
		{"blanks", "git   status\t-s", permission.Allow, "git status"},
		{"if then", "if true; then ls; fi", permission.Allow, "true"},
		{"time keyword", "time ls", permission.Allow, "ls"},
		{"bang", "! git status", permission.Allow, "git status"},
		{"for loop", "for f in a b; do ls $f; done", permission.Allow, "ls"},
		{"for loop asks for body", "for f in a b; do rm $f; done", permission.Ask, ""},
		{"case pattern is not skipped", "case x in x) ls;; esac", permission.Ask, ""},
		{"only syntax", "fi", permission.Ask, ""},
		{"remembered with keyword", "time go test ./...", permission.Allow, "go test"},
		{"remembered toolchain", "cargo +nightly build", permission.Allow, "cargo build"},
		{"remembered with stderr dup", "go test ./... 2>&1 | cat", permission.Allow, "go test"},
		// What worked before keeps working.
		{"chain needs every part", "git status && rm x", permission.Ask, ""},
		{"substitution", "ls $(id)", permission.Ask, ""},
		{"backticks", "echo `id`", permission.Ask, ""},
		{"process substitution in", "cat <(id)", permission.Ask, ""},
		{"process substitution out", "ls >(cat)", permission.Ask, ""},
		{"quoted separator", `echo "a; rm -f V"`, permission.Allow, "echo*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, remembered)
			if got.Verdict != tc.want || got.Rule != tc.rule {
				t.Errorf("Check(%q) = %v %q, want %v %q", tc.cmd, got.Verdict, got.Rule, tc.want, tc.rule)
			}
		})
	}
}

// FuzzCheck: no line makes the checks panic, and a line never passes while
// a deny rule matches it.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"ls -la", "rm\t-f V", `bash -c "rm -f V"`, "echo $(rm -f V", "ls >|", "{rm,-f}", `$'\x72m'`,
		"case x in x) rm;; esac", "f() { rm; }", "ls 2>&1 | tail", "a\\\nb", "env -S", "find -exec",
	} {
		f.Add(s)
	}
	rules := permission.Rules{Allow: []string{"ls", "echo*"}, Deny: []string{"rm"}}
	f.Fuzz(func(t *testing.T, s string) {
		d := rules.Check(s, map[string]bool{"ls": true, "cat": true})
		if d.Verdict == permission.Allow && (permission.Rules{Deny: rules.Deny}).Check(s, nil).Verdict == permission.Deny {
			t.Errorf("Check(%q) allows a denied line", s)
		}
		permission.Keys(s)
	})
}
