package permission_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/permission"
)

// TestDenySeesInsideSyntax: --deny rm sees the command inside the shell
// syntax a line-splitting lexer could not follow, even where an allow rule
// and a remembered key would pass rm.
func TestDenySeesInsideSyntax(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"rm", "ls", "cat", "echo*", "bash"}, Deny: []string{"rm"}}
	cases := []struct{ name, cmd string }{
		// Here-documents: substitutions in an unquoted body run; a body may
		// be a script (sh <<EOF); what follows the body is a command.
		{"heredoc substitution", "cat <<EOF\n$(rm -f V)\nEOF"},
		{"heredoc backticks", "cat <<EOF\n`rm -f V`\nEOF"},
		{"heredoc to a shell", "bash <<'EOF'\nrm -f V\nEOF"},
		{"dash heredoc", "sh <<-EOF\n\trm -f V\n\tEOF"},
		{"after heredoc", "cat <<EOF\nhello\nEOF\nrm -f V"},
		{"heredoc then and", "cat <<EOF && rm -f V\nhello\nEOF"},
		{"two heredocs", "cat <<A <<B\na\nA\nrm -f V\nB"},
		// $'…' and $"…".
		{"ansi-c plain", "$'rm' -f V"},
		{"ansi-c octal", `$'\162\155' -f V`},
		{"ansi-c unicode", `$'r\u006d' -f V`},
		{"locale quotes", `$"rm" -f V`},
		{"locale quotes in eval", `eval $"rm -f V"`},
		{"ansi-c in bash -c", `bash -c $'rm\t-f V'`},
		// Functions.
		{"function body", "f() { rm -f V; }"},
		{"function subshell body", "function f() ( rm -f V )"},
		{"later function", "f() { ls; }; f; g() { rm -f V; }; g"},
		{"function shadowing an allowed name", "ls() { rm -f V; }; ls"},
		// coproc.
		{"named coproc", "coproc NAME { rm -f V; }"},
		{"coproc subshell", "coproc (rm -f V)"},
		// case arms.
		{"case later arm", "case $x in a|b) ls;; *) rm -f V;; esac"},
		{"case fallthrough", "case x in x) ls ;& y) rm -f V ;; esac"},
		{"case continue", "case x in x) ls ;;& *) rm -f V ;; esac"},
		{"case subject", "case $(rm -f V) in *) ;; esac"},
		{"case pattern", "case x in $(rm -f V)) ;; esac"},
		// Groups.
		{"brace group second", "{ ls; rm -f V; }"},
		{"nested subshells", "( ls; (rm -f V) )"},
		{"group with redirect", "{ rm -f V; } > /dev/null 2>&1"},
		{"group in pipeline", "ls | { cat; rm -f V; }"},
		// Backslash-newline.
		{"continued list", "ls && \\\nrm -f V"},
		{"continued word", "r\\\nm\\\n -f V"},
		{"continued in double quotes", "bash -c \"r\\\nm -f V\""},
		// Arithmetic.
		{"arithmetic expansion", "echo $(( $(rm -f V) + 1 ))"},
		{"arithmetic command", "(( $(rm -f V) ))"},
		{"c-style for", "for ((i=$(rm -f V); i<1; i++)); do :; done"},
		{"c-style for body", "for ((i=0; i<1; i++)); do rm -f V; done"},
		{"let", "let x=$(rm -f V)"},
		{"subscript", "echo ${a[$(rm -f V)]}"},
		// time -p and !.
		{"time -p group", "time -p { rm -f V; }"},
		{"time -p pipeline", "time -p ls | rm -f V"},
		{"bang group", "! { rm -f V; }"},
		{"bang in if", "if ! rm -f V; then :; fi"},
		{"bang pipeline", "! ls | rm -f V"},
		// Elsewhere a word can run a command.
		{"default value", "echo ${x:-$(rm -f V)}"},
		{"test clause", "[[ $(rm -f V) ]]"},
		{"export", "export X=$(rm -f V)"},
		{"local", "f() { local x=`rm -f V`; }"},
		{"array", "a=( $(rm -f V) )"},
		{"stderr pipe", "ls |& rm -f V"},
		{"after comment", "ls # harmless\nrm -f V"},
		{"trap handler", "trap 'rm -f V' EXIT"},
		{"trap handler after --", `trap -- "ls; rm -f V" INT TERM`},
		{"select body", "select x in a; do rm -f V; done"},
		{"while condition group", "while { rm -f V; }; do break; done"},
		{"redirect target substitution", "ls > $(rm -f V)"},
		{"process substitution out", "ls > >(rm -f V)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, map[string]bool{"rm": true, "ls": true})
			if got.Verdict != permission.Deny || got.Rule != "rm" {
				t.Errorf("Check(%q) = %v %q, want deny \"rm\"", tc.cmd, got.Verdict, got.Rule)
			}
		})
	}
}

// TestAllowIsConservativeOnSyntax: allow rules and remembered keys pass
// plain lists, pipelines, groups and if/for/while bodies, and nothing whose
// effect an allow rule cannot see.
func TestAllowIsConservativeOnSyntax(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"ls", "echo*", "printf*", "true", "bash", "export", "let"}}
	remembered := map[string]bool{"cat": true, "go test": true}
	cases := []struct {
		name string
		cmd  string
		want permission.Verdict
		rule string
	}{
		// Here-documents: the body is a second program the rule never saw.
		{"heredoc", "cat <<EOF\nhi\nEOF", permission.Ask, ""},
		{"quoted dash heredoc", "cat <<-'EOF'\n\thi\n\tEOF", permission.Ask, ""},
		{"heredoc to an allowed shell", "bash <<EOF\nls\nEOF", permission.Ask, ""},
		{"herestring", "cat <<< 'a b'", permission.Allow, "cat"},
		// $'…' and $"…": fine as arguments, never as a program.
		{"ansi-c argument", `echo $'a\tb'`, permission.Allow, "echo*"},
		{"locale argument", `echo $"hi"`, permission.Allow, "echo*"},
		{"ansi-c program", "$'ls' -la", permission.Ask, ""},
		{"locale program", `$"ls"`, permission.Ask, ""},
		{"single-quoted substitution", "printf -v 'a[$(id)]' x", permission.Ask, ""},
		{"single-quoted backticks", "echo '`id`'", permission.Ask, ""},
		{"ansi-c spelled substitution", `printf -v $'a[\x24(id)]' x`, permission.Ask, ""},
		{"ansi-c spelled backticks", `echo $'\x60id\x60'`, permission.Ask, ""},
		{"double quotes do not", `echo "$(id)"`, permission.Ask, ""},
		// Functions and coproc change what a name runs.
		{"function", "f() { ls; }", permission.Ask, ""},
		{"function shadowing", "ls() { cat x; }; ls", permission.Ask, ""},
		{"function keyword", "function f { ls; }; f", permission.Ask, ""},
		{"coproc", "coproc ls", permission.Ask, ""},
		{"named coproc", "coproc c { ls; }", permission.Ask, ""},
		// case arms.
		{"case", "case $1 in *) cat x;; esac", permission.Ask, ""},
		// Groups.
		{"brace group", "{ ls; cat x; }", permission.Allow, "ls"},
		{"subshell", "(ls; cat x)", permission.Allow, "ls"},
		{"group needs every command", "{ ls; make; }", permission.Ask, ""},
		{"subshell writing", "(ls) > x", permission.Ask, ""},
		{"group to dev null", "{ ls; } 2>/dev/null", permission.Allow, "ls"},
		{"nested groups", "( { ls; }; (cat x) )", permission.Allow, "ls"},
		// Backslash-newline.
		{"continued arguments", "ls \\\n-la", permission.Allow, "ls"},
		{"continued list", "ls && \\\ncat x", permission.Allow, "ls"},
		// Arithmetic can run commands through array subscripts.
		{"arithmetic expansion", "echo $((1+2))", permission.Ask, ""},
		{"arithmetic command", "(( x = 1 ))", permission.Ask, ""},
		{"let", "let x=1", permission.Ask, ""},
		{"c-style for", "for ((i=0; i<3; i++)); do ls; done", permission.Ask, ""},
		{"subscript", "echo ${a[0]}", permission.Ask, ""},
		{"test clause", "[[ -f x ]] && ls", permission.Ask, ""},
		// Declarations are assignments.
		{"export", "export LD_PRELOAD=/x.so; ls", permission.Ask, ""},
		// time -p and !.
		{"time -p", "time -p ls", permission.Allow, "ls"},
		{"time -p remembered", "time -p go test ./...", permission.Allow, "go test"},
		{"time -p writing", "time -p cat x > out", permission.Ask, ""},
		{"bang", "! ls", permission.Allow, "ls"},
		{"bang writing", "! ls > x", permission.Ask, ""},
		// Pipelines and loops.
		{"stderr pipe", "ls |& cat", permission.Allow, "ls"},
		{"while", "while true; do ls; done", permission.Allow, "true"},
		{"comment", "ls # > x", permission.Allow, "ls"},
		// What the parser cannot read is asked.
		{"unclosed subshell", "ls; (", permission.Ask, ""},
		{"unclosed quote", "ls 'x", permission.Ask, ""},
		{"stray keyword", "cat x; done", permission.Ask, ""},
		{"stray close", "ls )", permission.Ask, ""},
		{"unclosed heredoc", "cat <<EOF\nhi", permission.Ask, ""},
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

// TestDenyReadsUnparseableLines: a line the parser cannot read is still
// denied when a deny rule matches what can be read of it, even where an
// allow rule and a remembered key would pass rm.
func TestDenyReadsUnparseableLines(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"rm", "ls"}, Deny: []string{"rm"}}
	cases := []struct{ name, cmd string }{
		{"before an unclosed subshell", "rm -rf /; ("},
		{"in an unclosed subshell", "ls; (rm -f V"},
		{"in an unclosed substitution", "echo $(rm -f V"},
		{"before an unclosed quote", "rm -f V 'x"},
		{"unfinished if", "if rm -f V; then"},
		{"bash -c of a bad line", "bash -c 'rm -f V; ('"},
		{"escaped", `\rm -f V; (`},
		{"path", "/bin/rm -f V )"},
		{"before a stray keyword", "ls\nrm -f V\nfi"},
		{"wrapped", "sudo rm -f V; esac"},
		{"quoted", `"rm" -f V; (`},
		{"braces", "{rm,-f,V}; ("},
		{"unclosed backticks", "echo `rm -f V"},
		{"unclosed heredoc", "bash <<EOF\nrm -f V"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Check(tc.cmd, map[string]bool{"rm": true, "ls": true})
			if got.Verdict != permission.Deny || got.Rule != "rm" {
				t.Errorf("Check(%q) = %v %q, want deny \"rm\"", tc.cmd, got.Verdict, got.Rule)
			}
		})
	}
	// The word scan of an unreadable line errs towards deny; a readable
	// one, and a here-document body, do not.
	for cmd, want := range map[string]permission.Verdict{
		"echo rm; (": permission.Deny,
		"echo rm":    permission.Ask,
		"ls; (":      permission.Ask,
		"git commit -F - <<EOF\ndon't rm it\nEOF": permission.Ask,
	} {
		if got := (permission.Rules{Deny: []string{"rm"}}).Check(cmd, nil); got.Verdict != want {
			t.Errorf("Check(%q) = %v, want %v", cmd, got.Verdict, want)
		}
	}
}

func TestKeysAndProgramsOnSyntax(t *testing.T) {
	t.Parallel()
	keys := []struct {
		in   string
		want []string
	}{
		{"time -p ls", []string{"ls"}},
		{"{ ls; git status; }", []string{"ls", "git status"}},
		{"! go test ./... |& tail", []string{"go test", "tail"}},
		{"f() { ls; }", nil},
		{"cat <<EOF\nx\nEOF", nil},
		{"coproc ls", nil},
		{"echo $((1+1))", nil},
		{"export X=1", nil},
		{"ls; (", nil},
	}
	for _, tc := range keys {
		if diff := cmp.Diff(tc.want, permission.Keys(tc.in)); diff != "" {
			t.Errorf("Keys(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	programs := []struct {
		in   string
		want []string
	}{
		{"echo $(rm x)", []string{"echo"}},
		{"PATH=/x ls && go test ./...", []string{"ls", "go test"}},
		{"cat <<EOF\nrm x\nEOF", []string{"cat"}},
		{"ls; (", []string{"ls"}},
	}
	for _, tc := range programs {
		if diff := cmp.Diff(tc.want, permission.Programs(tc.in)); diff != "" {
			t.Errorf("Programs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzReaders: Key and Programs, which also read fragments and lines
// the parser has to complete, never panic, and Keys, when it says a line
// can be remembered, names the same programs as Programs.
func FuzzReaders(f *testing.F) {
	for _, s := range []string{
		"then go test ./...", "for x in a b", "ls; (", "echo $(rm -f V", "cat <<EOF\nx", "f() {", "a=(", "case x in",
		"${a[", "$((", "[[ -f", "coproc x {", "time -p", "! ! ls", `$'\x72m`, "ls |&", "{rm,-f}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		permission.Key(s)
		programs := permission.Programs(s)
		if keys := permission.Keys(s); keys != nil && !cmp.Equal(keys, programs) {
			t.Errorf("Keys(%q) = %q, Programs = %q", s, keys, programs)
		}
	})
}

// TestConcurrentChecks: checks share no state, so sessions may check at
// once (run with -race: $'…' decoding and brace expansion once shared
// expand's package-level config).
func TestConcurrentChecks(t *testing.T) {
	t.Parallel()
	rules := permission.Rules{Allow: []string{"echo*"}, Deny: []string{"rm"}}
	done := make(chan permission.Decision)
	for range 8 {
		go func() {
			var d permission.Decision
			for range 50 {
				d = rules.Check(`echo $'a\tb' {x,y}; $'\x72m' -f V`, nil)
			}
			done <- d
		}()
	}
	for range 8 {
		if d := <-done; d.Verdict != permission.Deny {
			t.Errorf("concurrent Check = %v, want deny", d.Verdict)
		}
	}
}
