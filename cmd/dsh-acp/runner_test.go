package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/buildinfo"
)

// execRun runs dsh-acp in-process with stdin and returns exit code,
// stdout and stderr.
func execRun(t *testing.T, getenv func(string) string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, stdin, &out, &errb, getenv)
	return code, out.String(), errb.String()
}

// TestExecPromptFromStdin: "exec -" and a prompt piped with no prompt
// argument both read the prompt from stdin; nothing at all is a usage error.
func TestExecPromptFromStdin(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-"}, {}} {
		getenv := stateEnv(t)
		script := writeScript(t, `{"text":"Read it."}`)
		record := filepath.Join(t.TempDir(), "record.jsonl")
		all := append([]string{"exec", "--script", script, "--script-record", record, "--cwd", t.TempDir()}, args...)
		code, out, errb := execRun(t, getenv, strings.NewReader("a prompt\nof two lines\n"), all...)
		if code != 0 || !strings.Contains(out, "Read it.") {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errb)
		}
		rec, err := os.ReadFile(record)
		if err != nil || !strings.Contains(string(rec), `a prompt\nof two lines`) {
			t.Errorf("%q: the model was not sent the prompt from stdin: %s %v", args, rec, err)
		}
	}
	code, _, errb := execRun(t, stateEnv(t), strings.NewReader("  \n"), "exec", "--script", "x")
	if code != 2 || !strings.Contains(errb, "exec needs a prompt") {
		t.Errorf("empty stdin: exit %d %q", code, errb)
	}
	code, _, errb = execRun(t, stateEnv(t), nil, "exec", "--script", "x", "-")
	if code != 2 || !strings.Contains(errb, "no stdin") {
		t.Errorf("exec - with no stdin: exit %d %q", code, errb)
	}
}

// TestExecContinueAndSessions: --continue resumes the newest session of
// the directory; sessions --json lists it, show prints its conversation,
// rm deletes it.
func TestExecContinueAndSessions(t *testing.T) {
	t.Parallel()
	getenv := stateEnv(t)
	dir := t.TempDir()
	script := writeScript(t, `{"text":"First answer."}`)
	if code, out, errb := execRun(t, getenv, nil, "exec", "--script", script, "--cwd", dir, "remember the number 42"); code != 0 {
		t.Fatalf("exec: %d %s%s", code, out, errb)
	}
	// A session in another directory is newer, and not continued.
	if code, _, errb := execRun(t, getenv, nil, "exec", "--script", script, "--cwd", t.TempDir(), "elsewhere"); code != 0 {
		t.Fatalf("exec elsewhere: %d %s", code, errb)
	}
	script2 := writeScript(t, `{"text":"It was 42."}`)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	if code, _, errb := execRun(t, getenv, nil, "exec", "--script", script2, "--script-record", record, "--cwd", dir, "--continue", "which number?"); code != 0 {
		t.Fatalf("exec --continue: %d %s", code, errb)
	}
	rec, _ := os.ReadFile(record)
	if !strings.Contains(string(rec), "remember the number 42") || !strings.Contains(string(rec), "First answer.") || strings.Contains(string(rec), "elsewhere") {
		t.Errorf("--continue did not carry this directory's session:\n%s", rec)
	}
	if code, _, errb := execRun(t, getenv, nil, "exec", "--script", script2, "--cwd", t.TempDir(), "--continue", "x"); code != 2 || !strings.Contains(errb, "no stored session") {
		t.Errorf("--continue with nothing to continue: exit %d %q", code, errb)
	}

	code, out, errb := execRun(t, getenv, nil, "sessions", "--json", "--cwd", dir)
	var list []struct {
		ID      string    `json:"id"`
		Cwd     string    `json:"cwd"`
		Updated time.Time `json:"updated"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Cwd != dir || list[0].Updated.IsZero() {
		t.Fatalf("sessions --json: exit %d %q %s", code, out, errb)
	}
	id := list[0].ID
	code, out, errb = execRun(t, getenv, nil, "sessions", "show", id)
	for _, want := range []string{"session " + id, dir, "> remember the number 42", "First answer.", "> which number?", "It was 42."} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sessions show lacks %q (exit %d):\n%s%s", want, code, out, errb)
		}
	}
	if code, _, errb := execRun(t, getenv, nil, "sessions", "rm", id); code != 0 {
		t.Fatalf("sessions rm: %d %s", code, errb)
	}
	if code, out, _ := execRun(t, getenv, nil, "sessions", "--json", "--cwd", dir); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("after rm: exit %d %q", code, out)
	}
	if code, _, errb := execRun(t, getenv, nil, "sessions", "rm", id); code != 1 || !strings.Contains(errb, "not found") {
		t.Errorf("rm twice: exit %d %q", code, errb)
	}
	if code, _, errb := execRun(t, getenv, nil, "sessions", "show"); code != 2 || !strings.Contains(errb, "one session ID") {
		t.Errorf("show without id: exit %d %q", code, errb)
	}
}

// TestHelpCommand: help COMMAND prints that command's own usage.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"exec": "Exit codes:", "sessions": "sessions show ID", "rules": "rules rm N",
		"config": "Precedence: flag > environment", "completion": "bash|zsh|fish",
		"serve": "--base-url", "login": "dsh-acp login [--base-url URL]", "logout": "dsh-acp logout", "help": "dsh-acp help [COMMAND]", "version": "dsh-acp version",
	}
	for _, c := range commandTable() {
		code, out, errb := execRun(t, stateEnv(t), nil, "help", c.name)
		if code != 0 || errb != "" || !strings.Contains(out, want[c.name]) || want[c.name] == "" {
			t.Errorf("help %s: exit %d, stdout lacks %q:\n%s%s", c.name, code, want[c.name], out, errb)
		}
	}
	if code, _, errb := execRun(t, stateEnv(t), nil, "help", "nope"); code != 2 || !strings.Contains(errb, `no command "nope"`) {
		t.Errorf("help nope: exit %d %q", code, errb)
	}
}

// TestCompletionScripts: each script is accepted by its shell (where that
// shell is installed), and bash's completes a subcommand and a flag.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	check := map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}}
	for shell, argv := range check {
		code, out, errb := execRun(t, stateEnv(t), nil, "completion", shell)
		if code != 0 || out == "" {
			t.Fatalf("completion %s: exit %d %s", shell, code, errb)
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Logf("%s not installed: its script is not checked", shell)
			continue
		}
		path := filepath.Join(t.TempDir(), "dsh-acp."+shell)
		if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(argv[0], append(argv[1:], path)...).CombinedOutput(); err != nil {
			t.Errorf("%s rejects its completion script: %v\n%s", shell, err, b)
		}
	}
	_, script, _ := execRun(t, stateEnv(t), nil, "completion", "bash")
	probe := script + `
COMP_WORDS=(dsh-acp ex); COMP_CWORD=1; _dsh_acp; echo "${COMPREPLY[*]}"
COMP_WORDS=(dsh-acp exec --contin); COMP_CWORD=2; _dsh_acp; echo "${COMPREPLY[*]}"
`
	b, err := exec.Command("bash", "-c", probe).CombinedOutput()
	if err != nil || string(b) != "exec\n--continue\n" {
		t.Errorf("bash completion: %v %q", err, b)
	}
	// zsh: sourced into a shell with compinit, it registers itself for
	// dsh-acp (as the README's source <(…) does for bash) without an error.
	if _, err := exec.LookPath("zsh"); err == nil {
		_, zscript, _ := execRun(t, stateEnv(t), nil, "completion", "zsh")
		path := filepath.Join(t.TempDir(), "completion.zsh")
		if err := os.WriteFile(path, []byte(zscript), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("zsh", "-f", "-c", `autoload -U compinit && compinit -u -D && source "$1" && print -r -- "$_comps[dsh-acp]"`, "zsh", path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		if b, err := cmd.CombinedOutput(); err != nil || string(b) != "_dsh_acp\n" {
			t.Errorf("zsh completion sourced: %v %q", err, b)
		}
	}
	if code, _, errb := execRun(t, stateEnv(t), nil, "completion", "tcsh"); code != 2 || !strings.Contains(errb, "tcsh") {
		t.Errorf("completion tcsh: exit %d %q", code, errb)
	}
}

// TestVersionFromBuildInfo: the built binary says what its own build
// information says (internal/buildinfo's test has the rules).
func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	// The built binary says what its own build information says.
	b, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Skipf("go version -m: %v", err)
	}
	info := &debug.BuildInfo{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			info.Main.Version = f[2]
		case len(f) >= 2 && f[0] == "build":
			if k, v, ok := strings.Cut(f[1], "="); ok {
				info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
			}
		}
	}
	out, err := exec.Command(binPath, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "dsh-acp " + buildinfo.Version("", "", info, true) + "\n"; string(out) != want {
		t.Errorf("binary says %q, its build information %q", out, want)
	}
}

// TestExecRefusalSaysHowToAllow: without a terminal and without --yes, the
// first refusal says, once, how to allow commands.
func TestExecRefusalSaysHowToAllow(t *testing.T) {
	t.Parallel()
	script := writeScript(t, bashCall("", "echo one"), bashCall("", "echo two"), `{"text":"done"}`)
	code, _, errb := execRun(t, stateEnv(t), nil, "exec", "--script", script, "--cwd", t.TempDir(), "go")
	if code != 4 || strings.Count(errb, "--default-mode sandbox") != 1 || !strings.Contains(errb, `refused "echo one"`) || !strings.Contains(errb, "--allow PATTERN") {
		t.Errorf("exit %d, stderr:\n%s", code, errb)
	}
}

// TestExecErrorsAreSentences: what exec prints on failure is a sentence
// saying what is wrong, never a JSON-RPC error object.
func TestExecErrorsAreSentences(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "gone")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--script", "x", "--cwd", missing}, "new session in " + missing + ": invalid cwd"},
		{[]string{"--base-url", "api.deepseek.com"}, `--base-url "api.deepseek.com" is not a URL the agent can call: it needs http:// or https://`},
		{[]string{"--script", "x", "--mcp-config", missing}, "--mcp-config"},
	}
	for _, c := range cases {
		code, _, errb := execRun(t, stateEnv(t), nil, append(append([]string{"exec"}, c.args...), "hi")...)
		if code == 0 || !strings.HasPrefix(errb, "dsh-acp exec: ") || !strings.Contains(errb, c.want) || strings.Contains(errb, `"code"`) || strings.Contains(errb, "{") {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, errb)
		}
	}
}

// TestExecMCPConfig: exec starts the servers of --mcp-config and the model
// can call their tools (the test binary serves MCP as "big").
func TestExecMCPConfig(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "mcp.json")
	body, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"big": map[string]any{"command": self, "args": []string{}, "env": map[string]string{mcpServerEnv: "serve"}},
	}})
	if err := os.WriteFile(cfgFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `{"tool_calls":[{"name":"mcp__big__big","arguments":{}}]}`, `{"text":"called"}`)
	code, out, errb := execRun(t, tmpEnv(t.TempDir()), nil, "exec", "--script", script, "--cwd", t.TempDir(),
		"--state-dir", t.TempDir(), "--allow", "mcp:big/big", "--mcp-config", cfgFile, "call it")
	if code != 0 || !strings.Contains(out, "\n10000\n") || !strings.Contains(out, "called") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
}

// TestSessionsShowPlan: sessions show prints an update_plan call as the
// plan, one step a line, as exec printed it, not as raw JSON.
func TestSessionsShowPlan(t *testing.T) {
	t.Parallel()
	getenv := stateEnv(t)
	dir := t.TempDir()
	script := writeScript(t,
		`{"tool_calls":[{"name":"update_plan","arguments":{"plan":[{"step":"Look around","status":"in_progress"},{"step":"Report","status":"pending"}]}}]}`,
		`{"text":"Planned."}`)
	if code, out, errb := execRun(t, getenv, nil, "exec", "--script", script, "--cwd", dir, "plan it"); code != 0 {
		t.Fatalf("exec: %d %s%s", code, out, errb)
	}
	code, out, errb := execRun(t, getenv, nil, "sessions", "--json", "--cwd", dir)
	var list []struct {
		ID      string    `json:"id"`
		Cwd     string    `json:"cwd"`
		Updated time.Time `json:"updated"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("sessions --json: exit %d %q %s", code, out, errb)
	}
	code, out, errb = execRun(t, getenv, nil, "sessions", "show", list[0].ID)
	if want := "• Plan\n  [>] Look around\n  [ ] Report\n"; code != 0 || !strings.Contains(out, want) || strings.Contains(out, `"status"`) {
		t.Errorf("sessions show (exit %d) lacks %q or shows raw JSON:\n%s%s", code, want, out, errb)
	}
}

// TestExecMCPRefusalHint: a refused MCP call's hint names the flags that
// cover MCP tools (its own --allow key, --allow-mcp-readonly), not the
// sandbox, which never does.
func TestExecMCPRefusalHint(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "mcp.json")
	body, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"big": map[string]any{"command": self, "args": []string{}, "env": map[string]string{mcpServerEnv: "serve"}},
	}})
	if err := os.WriteFile(cfgFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `{"tool_calls":[{"name":"mcp__big__big","arguments":{}}]}`, `{"text":"called"}`)
	code, out, errb := execRun(t, tmpEnv(t.TempDir()), nil, "exec", "--script", script, "--cwd", t.TempDir(),
		"--state-dir", t.TempDir(), "--mcp-config", cfgFile, "call it")
	if code != 0 || !strings.Contains(errb, "--allow mcp:big/big") || !strings.Contains(errb, "--allow-mcp-readonly") || strings.Contains(errb, "--default-mode sandbox") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	if strings.Contains(out, "\n10000\n") || !strings.Contains(out, "no one could be asked") {
		t.Errorf("the refused call ran, or its result is not shown:\n%s", out)
	}
}
