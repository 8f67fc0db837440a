package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

// tmpEnv is an environment with only TMPDIR, so what a run keeps there
// (spill files) stays in the test's directory.
func tmpEnv(dir string) func(string) string {
	return func(k string) string {
		if k == "TMPDIR" {
			return dir
		}
		return ""
	}
}

// TestExecTour runs the newcomer's first command: the scripted tour, offline,
// with no key. It must show commands, their output, a failure's exit code and
// a background task's output — also the second time in the same state
// directory, where the task's id is no longer bash-1 (ids run on).
func TestExecTour(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := stateEnv(t)
	for i := 1; i <= 2; i++ {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		code := run(ctx, []string{"exec", "--script", "../../examples/tour.jsonl", "--yes", "--cwd", dir, "Show me around"}, nil, &out, &errb, env)
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, out.String(), errb.String())
		}
		got := out.String()
		for _, want := range []string{
			"Let me look around first.",
			"$ pwd && ls | head -5",
			dir,
			"started background task bash-" + strconv.Itoa(i),
			"[exit code: 2]",
			"tick 1\ntick 2\ntick 3\ndone",
			"[status: completed, exit code: 0]",
			"That was the tour",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: output lacks %q\n--- output:\n%s", i, want, got)
			}
		}
		if strings.Contains(got, "The user wants a tour") {
			t.Errorf("thoughts printed without --thoughts:\n%s", got)
		}
	}
}

// TestExecRefusesWithoutYes: without --yes every permission question is
// answered "reject", the command does not run, and the model is told.
func TestExecRefusesWithoutYes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	script := writeScript(t,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"touch ran","description":"Create a marker file"}}]}`,
		`{"text":"ok"}`)
	var out, errb bytes.Buffer
	code := run(ctx, []string{"exec", "--script", script, "--cwd", dir, "go"}, nil, &out, &errb, stateEnv(t))
	if code != 4 {
		t.Fatalf("exit %d, want 4 (every command refused): %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the refused command ran")
	}
	// Shown once, in place: the result the model got, which says that
	// no one was asked (not that the user rejected it).
	if strings.Count(out.String(), "permission denied") != 1 || !strings.Contains(out.String(), "no one could be asked") || strings.Contains(out.String(), "rejected") {
		t.Errorf("the refusal as the model was told it:\n%s", out.String())
	}
	if strings.Count(errb.String(), "refused") != 2 {
		t.Errorf("stderr: the hint and the exit's reason, once each:\n%s", errb.String())
	}
}

func TestExecNeedsPrompt(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"exec"}, nil, &out, &errb, stateEnv(t)); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "needs a prompt") {
		t.Errorf("stderr = %q", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout written: %q", out.String())
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		env       map[string]string
		args      []string
		wantKey   string
		wantURL   string
		wantModel string
		wantErr   string
	}{
		{name: "dsh key wins", env: map[string]string{"DSH_API_KEY": "a", "DEEPSEEK_API_KEY": "b"}, wantKey: "a"},
		{name: "deepseek key fallback", env: map[string]string{"DEEPSEEK_API_KEY": "b"}, wantKey: "b"},
		{name: "env base url and model", env: map[string]string{"DSH_BASE_URL": "http://127.0.0.1:1/v1", "DSH_MODEL": "m"}, wantURL: "http://127.0.0.1:1/v1", wantModel: "m"},
		{name: "flags beat env", env: map[string]string{"DSH_MODEL": "m"}, args: []string{"--model", "n"}, wantModel: "n"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{name: "timeout above max", args: []string{"--timeout", "20m"}, wantErr: "above --max-timeout"},
		{name: "stray argument", args: []string{"--model", "m", "hello"}, wantErr: "flags only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tc.env[k] }
			cfg, err := parseServe(tc.args, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.apiKey != tc.wantKey || cfg.baseURL != tc.wantURL || cfg.model != tc.wantModel {
				t.Errorf("got key=%q url=%q model=%q", cfg.apiKey, cfg.baseURL, cfg.model)
			}
		})
	}
}

// TestVersionPrintsNothingElse: --version is the one line on stdout.
func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, nil, &out, &errb, stateEnv(t)); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "dsh-acp ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("stdout = %q", out.String())
	}
}

// TestExecMalformedScript: a broken script fails the prompt with its
// file:line, it does not take the program down before it can say so.
func TestExecMalformedScript(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `{"text":"fine"}`, `{"text": Infinity}`)
	var out, errb bytes.Buffer
	state := stateEnv(t)
	code := run(context.Background(), []string{"exec", "--script", script, "--cwd", t.TempDir(), "go"}, nil, &out, &errb, state)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), script+":2") {
		t.Errorf("stderr does not name the bad line: %q", errb.String())
	}
	// The failure is said once, for a person: no log line mixes into it.
	if strings.Contains(errb.String(), `"level"`) || strings.Contains(out.String(), `"level"`) {
		t.Errorf("log lines in the human output:\nstdout: %s\nstderr: %s", out.String(), errb.String())
	}
	// It failed before the model answered: no session is left stored.
	if left, _ := filepath.Glob(filepath.Join(state("DSH_STATE_DIR"), "sessions", "*")); len(left) != 0 {
		t.Errorf("a session that failed before the model answered was stored: %v", left)
	}
}

// TestExecRelativeCwd: --cwd is resolved against the current directory.
func TestExecRelativeCwd(t *testing.T) {
	t.Parallel()
	cfg, err := parseExec([]string{"--cwd", "sub/dir", "hello"}, stateEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "sub/dir"); cfg.cwd != want {
		t.Errorf("cwd = %q, want %q", cfg.cwd, want)
	}
}

// TestExecInterrupt: Ctrl-C (the context) cancels the turn the way an
// editor does: the command is stopped, the abort is shown, exit 130.
func TestExecInterrupt(t *testing.T) {
	t.Parallel()
	deadline, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	ctx, interrupt := context.WithCancel(deadline)
	defer interrupt()
	script := writeScript(t,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"echo started; exec sleep 30","description":"Wait"}}]}`,
		`{"text":"never"}`)
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"exec", "--script", script, "--yes", "--cwd", t.TempDir(), "wait"}, nil, pw, io.Discard, stateEnv(t))
		pw.Close()
	}()
	var seen strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if sc.Text() == "started" {
			interrupt()
		}
	}
	select {
	case c := <-code:
		if c != 130 {
			t.Errorf("exit %d, want 130", c)
		}
	case <-deadline.Done():
		t.Fatal("exec did not stop")
	}
	if !strings.Contains(seen.String(), "Error: command aborted") {
		t.Errorf("output:\n%s", seen.String())
	}
}

// TestExecExitCodes: a script can tell how the turn ended.
func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	call := func(cmd string) string {
		return `{"tool_calls":[{"name":"bash","arguments":{"command":"` + cmd + `","description":"Run it"}}]}`
	}
	cases := []struct {
		name  string
		flags []string
		turns []string
		want  int
	}{
		{name: "end turn", flags: []string{"--yes"}, turns: []string{call("true"), `{"text":"ok"}`}, want: 0},
		{name: "no commands", turns: []string{`{"text":"ok"}`}, want: 0},
		{name: "model error", turns: []string{`{"error":"upstream exploded"}`}, want: 1},
		{name: "max requests", flags: []string{"--yes", "--max-requests", "1"}, turns: []string{call("true"), `{"text":"ok"}`}, want: 3},
		{name: "length", turns: []string{`{"text":"cut","finish":"length"}`}, want: 3},
		{name: "all denied by rule", flags: []string{"--yes", "--deny", "rm"}, turns: []string{call("rm -f x"), call("rm -f y"), `{"text":"ok"}`}, want: 4},
		{name: "some denied", flags: []string{"--yes", "--deny", "rm"}, turns: []string{call("rm -f x"), call("true"), `{"text":"ok"}`}, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			script := writeScript(t, tc.turns...)
			args := append([]string{"exec", "--script", script, "--cwd", t.TempDir()}, tc.flags...)
			var out, errb bytes.Buffer
			if code := run(ctx, append(args, "go"), nil, &out, &errb, stateEnv(t)); code != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.want, out.String(), errb.String())
			}
		})
	}
}

// TestExecLimitsAndNotes: --timeout and --max-timeout are one limits value:
// the executor enforces the default the model's bash description names. What
// a terminal cannot show — the timeout, where truncated output went — is
// printed after the live output in the words the model reads, and so is the
// exit.
func TestExecLimitsAndNotes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := writeScript(t,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"echo started; exec sleep 30","description":"Wait too long"}}]}`,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"head -c 40000 /dev/zero | tr '\\0' x; exit 3","description":"Print a lot"}}]}`,
		`{"text":"done"}`)
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	var out, errb bytes.Buffer
	code := run(ctx, []string{"exec", "--script", script, "--script-record", record, "--yes", "--timeout", "300ms", "--max-timeout", "1s",
		"--cwd", t.TempDir(), "go"}, nil, &out, &errb, tmpEnv(t.TempDir()))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"started\n",
		"[timed out after 300ms]\n[killed by signal: SIGTERM]",
		"[output truncated; full output: ",
		"]\n[exit code: 3]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\n--- output:\n%s", want, got)
		}
	}
	if strings.Contains(got, "[timed out]") || strings.Contains(got, "\n[full output: ") {
		t.Errorf("output paraphrases the markers:\n%s", got)
	}
	sent, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sent), "defaults to 300ms") || !strings.Contains(string(sent), "cannot exceed 1000ms") {
		t.Errorf("the bash description does not name the limits:\n%.2000s", sent)
	}
}

// TestExecKeepsSpillFiles: the spill file exec's output names is still
// there when exec has returned, under $TMPDIR, holding every byte.
func TestExecKeepsSpillFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tmp := t.TempDir()
	script := writeScript(t,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"seq 1 20000","description":"Print a lot"}}]}`,
		`{"text":"done"}`)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"exec", "--script", script, "--yes", "--cwd", t.TempDir(), "go"}, nil, &out, &errb, tmpEnv(tmp)); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	_, after, ok := strings.Cut(out.String(), "[output truncated; full output: ")
	path, _, _ := strings.Cut(after, "]")
	if !ok || path == "" {
		t.Fatalf("output names no spill file:\n%.2000s", out.String())
	}
	if !strings.HasPrefix(path, tmp+string(filepath.Separator)) {
		t.Errorf("spill file %s is not under $TMPDIR %s", path, tmp)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the spill file exec named is gone: %v", err)
	}
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if string(full) != want.String() {
		t.Errorf("spill file holds %d bytes, want the %d of the whole output", len(full), want.Len())
	}
}

// stateEnv is an empty environment but for a private state directory: no
// test writes to the real home.
func stateEnv(t *testing.T) func(string) string {
	dir := t.TempDir()
	return func(k string) string {
		if k == "DSH_STATE_DIR" {
			return dir
		}
		return ""
	}
}

// TestExecInstructionsAndPlan: exec names the instruction files it read —
// the user's (from the config directory of its environment) and the
// cwd's — and prints each plan the model sends as a list.
func TestExecInstructionsAndPlan(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, cfgHome, state := t.TempDir(), t.TempDir(), t.TempDir()
	for path, text := range map[string]string{
		filepath.Join(dir, "AGENTS.md"):                "cwd rules\n",
		filepath.Join(cfgHome, "dsh-acp", "AGENTS.md"): "user rules\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) string {
		switch k {
		case "DSH_STATE_DIR":
			return state
		case "XDG_CONFIG_HOME":
			return cfgHome
		}
		return ""
	}
	script := writeScript(t,
		`{"tool_calls":[{"name":"update_plan","arguments":{"plan":[{"step":"Read","status":"completed"},{"step":"Fix","status":"in_progress"},{"step":"Test","status":"pending"}]}}]}`,
		`{"text":"Planned."}`)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"exec", "--script", script, "--cwd", dir, "plan it"}, nil, &out, &errb, env); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	got := out.String()
	user := filepath.Join(cfgHome, "dsh-acp", "AGENTS.md")
	for _, want := range []string{"• Read project instructions\n  " + user + "\n  " + filepath.Join(dir, "AGENTS.md") + "\n", "• Plan\n  [x] Read\n  [>] Fix\n  [ ] Test\n", "Planned."} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\n--- output:\n%s", want, got)
		}
	}
	if strings.Contains(got, "update_plan") || strings.Contains(got, "Plan updated") {
		t.Errorf("the plan tool call was shown:\n%s", got)
	}
}

// TestExecFailedRunWithInstructionsLeavesNoSession: the "Read project
// instructions" call the agent shows before the first request is not the
// model answering, so a run whose model request fails still leaves no
// stored session behind.
func TestExecFailedRunWithInstructionsLeavesNoSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("run make check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `{"error":"endpoint down"}`)
	state := stateEnv(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "--script", script, "--cwd", dir, "go"}, nil, &out, &errb, state)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "Read project instructions") {
		t.Fatalf("the instruction files were not shown, so this test proves nothing:\n%s", out.String())
	}
	if left, _ := filepath.Glob(filepath.Join(state("DSH_STATE_DIR"), "sessions", "*")); len(left) != 0 {
		t.Errorf("a session that failed before the model answered was stored: %v", left)
	}
}

// TestExecUnresolvedHostSaidFirst: with no key and a base URL whose host
// does not resolve (.invalid never does, RFC 6761), the first thing exec
// says is the host, not only the missing key; and the run leaves no
// stored session.
func TestExecUnresolvedHostSaidFirst(t *testing.T) {
	t.Parallel()
	state := stateEnv(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "--base-url", "https://no-such-host.invalid", "--cwd", t.TempDir(), "hi"}, nil, &out, &errb, state)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if !strings.Contains(lines[0], `host "no-such-host.invalid" does not resolve`) {
		t.Errorf("first line does not say the host does not resolve:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "no API key") {
		t.Errorf("the missing key is not said too:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), `"jsonrpc"`) || strings.Contains(errb.String(), `"code"`) {
		t.Errorf("a JSON-RPC object reached the person:\n%s", errb.String())
	}
}

// TestExecSlashCommandLeavesNoSession: a slash command on a new session is
// answered by the agent alone (the model is never asked): nothing is left
// to resume, so nothing is stored; on a resumed session it changes nothing.
func TestExecSlashCommandLeavesNoSession(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `{"error":"the model must not be asked"}`)
	state := stateEnv(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exec", "--script", script, "--cwd", t.TempDir(), "/plan"}, nil, &out, &errb, state)
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if left, _ := filepath.Glob(filepath.Join(state("DSH_STATE_DIR"), "sessions", "*")); len(left) != 0 {
		t.Errorf("a new session that only ran /plan was stored: %v", left)
	}
}

// TestExecKeepsWhatTheModelAnswered: whether a failed run's new session is
// kept is judged by what the session holds, not by what was printed. The
// agent's own note (an MCP server that failed to start) prints as a
// message but is no answer: the session goes. A plan prints as no tool
// call but is the model's: the session stays.
func TestExecKeepsWhatTheModelAnswered(t *testing.T) {
	t.Parallel()
	stored := func(state func(string) string) []string {
		left, _ := filepath.Glob(filepath.Join(state("DSH_STATE_DIR"), "sessions", "*.jsonl"))
		return left
	}
	t.Run("an agent's note", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mcp := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"broken":{"command":"/bin/false"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		state := stateEnv(t)
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"exec", "--script", writeScript(t, `{"error":"endpoint down"}`), "--cwd", dir, "--mcp-config", mcp, "go"}, nil, &out, &errb, state)
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), `MCP server "broken"`) {
			t.Fatalf("the note was not printed, so this test proves nothing:\n%s", out.String())
		}
		if left := stored(state); len(left) != 0 {
			t.Errorf("a session the model never answered in was stored: %v", left)
		}
	})
	t.Run("a plan", func(t *testing.T) {
		t.Parallel()
		script := writeScript(t,
			`{"tool_calls":[{"name":"update_plan","arguments":{"plan":[{"step":"Look around","status":"in_progress"}]}}]}`,
			`{"error":"endpoint down"}`)
		state := stateEnv(t)
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"exec", "--script", script, "--cwd", t.TempDir(), "go"}, nil, &out, &errb, state)
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
		}
		if left := stored(state); len(left) != 1 {
			t.Errorf("the session with the model's plan was not kept: %v\nstdout: %s", left, out.String())
		}
	})
}
