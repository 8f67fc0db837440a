package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCommandLine: what a person types does what it says; help goes to
// stdout, usage errors to stderr, and no stray word is ever taken as a
// prompt for the model.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // substring; "" means stdout must be empty
		wantStderr string // substring; "" means stderr must be empty
	}{
		{name: "help command", args: []string{"help"}, wantStdout: "dsh-acp exec [flags] PROMPT..."},
		{name: "help flag", args: []string{"--help"}, wantStdout: "--base-url"},
		{name: "serve help", args: []string{"serve", "-h"}, wantStdout: "Usage:"},
		{name: "exec help", args: []string{"exec", "--help"}, wantStdout: "Exit codes:"},
		{name: "exec help after prompt", args: []string{"exec", "hello", "--help"}, wantStdout: "--yes"},
		{name: "version command", args: []string{"version"}, wantStdout: "dsh-acp " + version()},
		{name: "version flag", args: []string{"serve", "--version"}, wantStdout: "dsh-acp " + version()},
		{name: "unknown command", args: []string{"hello"}, wantCode: 2, wantStderr: `unknown command "hello"`},
		{name: "bad flag", args: []string{"--frobnicate"}, wantCode: 2, wantStderr: "Run 'dsh-acp --help'"},
		{name: "serve stray argument", args: []string{"serve", "x"}, wantCode: 2, wantStderr: "flags only"},
		{name: "exec bad flag after prompt", args: []string{"exec", "hi", "--frobnicate"}, wantCode: 2, wantStderr: "frobnicate"},
		{name: "compact-at above 1", args: []string{"--compact-at", "1.5"}, wantCode: 2, wantStderr: "--compact-at must be above 0 and at most 1"},
		{name: "negative context window", args: []string{"--context-window", "-5"}, wantCode: 2, wantStderr: "--context-window must be positive"},
		{name: "help names the window", args: []string{"--help"}, wantStdout: "--context-window TOKENS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, nil, &out, &errb, stateEnv(t))
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out.String(), errb.String())
			}
			check := func(stream, got, want string) {
				if want == "" && got != "" {
					t.Errorf("%s written: %q", stream, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s = %q, want it to contain %q", stream, got, want)
				}
			}
			check("stdout", out.String(), tc.wantStdout)
			check("stderr", errb.String(), tc.wantStderr)
		})
	}
}

// TestExecFlagsAnywhere: a flag after the prompt is a flag; after "--"
// everything is prompt text.
func TestExecFlagsAnywhere(t *testing.T) {
	t.Parallel()
	cfg, err := parseExec([]string{"--script", "f", "Show me around", "--yes", "--thoughts"}, stateEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.prompt != "Show me around" || !cfg.yes || !cfg.thoughts || cfg.script != "f" {
		t.Errorf("prompt=%q yes=%v thoughts=%v script=%q", cfg.prompt, cfg.yes, cfg.thoughts, cfg.script)
	}
	cfg, err = parseExec([]string{"say", "--yes", "--", "--yes", "-x"}, stateEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.prompt != "say --yes -x" || !cfg.yes {
		t.Errorf("prompt=%q yes=%v", cfg.prompt, cfg.yes)
	}
}

// TestServeLogsQuietOnStderr: at the default level the server writes no
// info lines to stderr (editors show every stderr line to the user), while
// a log file gets them.
func TestServeLogsQuietOnStderr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logFile := t.TempDir() + "/log"
	for _, args := range [][]string{{"--script", "none.jsonl"}, {"--script", "none.jsonl", "--log-file", logFile}} {
		var out, errb bytes.Buffer
		if code := run(ctx, args, strings.NewReader(""), &out, &errb, stateEnv(t)); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if strings.Contains(errb.String(), `"level":"info"`) {
			t.Errorf("%v: info on stderr by default:\n%s", args, errb.String())
		}
	}
	logged := readFile(t, logFile)
	if !strings.Contains(logged, `"level":"info"`) || !strings.Contains(logged, "serving ACP on stdio") {
		t.Errorf("log file lacks info lines:\n%s", logged)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
