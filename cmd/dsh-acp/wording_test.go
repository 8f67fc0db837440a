package main

import (
	"strings"
	"testing"
)

// TestFlagErrorsAreSentences: a bad flag or value is told in a sentence
// naming the flag, the value and the fix — never the flag package's own
// words — over the real binary, exit 2.
func TestFlagErrorsAreSentences(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--model-timeout", "3", "x"}, `--model-timeout "3": a duration needs a unit: 90s, 2m, 1h30m`},
		{[]string{"exec", "--bogus", "x"}, "there is no flag --bogus"},
		{[]string{"exec", "--modle", "m", "x"}, "there is no flag --modle; did you mean --model?"},
		{[]string{"exec", "--max-requests", "many", "x"}, `--max-requests "many": want a whole number, e.g. 100`},
		{[]string{"exec", "--thinking"}, "--thinking needs a value: --thinking off|high|max"},
		{[]string{"sessions", "prune", "--older-than", "3d"}, `--older-than "3d": a duration needs a unit: 90s, 2m, 1h30m (Go's form); Go has no d: 72h is 3 days`},
		{[]string{"exec", "--base-url", "127.0.0.1:8080", "x"}, `--base-url "127.0.0.1:8080" is not a URL the agent can call: it needs http:// or https:// and a host, e.g. https://api.deepseek.com; did you mean http://127.0.0.1:8080?`},
		{[]string{"login", "--base-url", "api.example.com/v1"}, "did you mean https://api.example.com/v1?"},
		{[]string{"exec", "--allow", "", "x"}, `--allow "": an empty pattern would match every command`},
		{[]string{"exec", "--deny", " ", "x"}, `--deny " ": an empty pattern would match every command`},
		{[]string{"exec", "--sandbox-read", "/no/such/dir", "x"}, "--sandbox-read /no/such/dir: there is nothing there to let commands read"},
	} {
		args := append([]string{c.args[0], "--state-dir", state}, c.args[1:]...)
		if c.args[0] == "login" {
			args = c.args
		}
		code, _, errb := runBin(t, args...)
		if code != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, errb, c.want)
		}
		for _, leak := range []string{"flag provided but not defined", "invalid value", "parse error", "first path segment", "-model-timeout:"} {
			if strings.Contains(errb, leak) {
				t.Errorf("%q: the flag package's words leak: %q", c.args, errb)
			}
		}
	}
}

// TestUnresolvedHostAtOnce: with a key, a host that does not resolve (.invalid
// never does, RFC 6761) is said as such, without retries.
func TestUnresolvedHostAtOnce(t *testing.T) {
	t.Parallel()
	getenv := stateEnv(t)
	withKey := func(k string) string {
		if k == "DSH_API_KEY" {
			return "sk-test-0123456789"
		}
		return getenv(k)
	}
	code, _, errb := execRun(t, withKey, nil, "exec", "--base-url", "https://no-such-host.invalid", "--cwd", t.TempDir(), "hi")
	if code != 1 || !strings.Contains(errb, `its host "no-such-host.invalid" does not resolve`) || strings.Contains(errb, "retr") {
		t.Errorf("exit %d, stderr:\n%s", code, errb)
	}
}

// TestHelpLoginAndConfigWords: help login lists login's own flag, not the
// server's; config shows what a run uses for every setting, never "".
func TestHelpLoginAndConfigWords(t *testing.T) {
	t.Parallel()
	code, out, errb := runBin(t, "help", "login")
	if code != 0 || !strings.Contains(out, "--base-url") || strings.Contains(out, "--allow") || strings.Contains(out, "--docker-image") {
		t.Errorf("help login: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = runBin(t, "config", "--state-dir", t.TempDir())
	if code != 0 || strings.Contains(out, `""`) || !strings.Contains(out, "log-file") {
		t.Errorf("config: exit %d\n%s%s", code, out, errb)
	}
}
