package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/execclient"
	"github.com/dsh-acp/dsh-acp/internal/signin"
	"github.com/dsh-acp/dsh-acp/internal/storecmd"
)

// exec is `dsh-acp exec`: one prompt through the same agent the editor
// gets, driven by the exec client (internal/execclient) in this process.
func (pr program) exec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, err := parseExec(args, getenv)
	if err == nil && !cfg.version {
		cfg.prompt, err = execclient.ReadPrompt(cfg.prompt, stdin)
	}
	if code, done := settle(cfg, err, "dsh-acp exec", stdout, stderr); done {
		return code
	}
	cfg.process, cfg.dropped = pr.process, pr.dropped
	o := execclient.Options{
		Prompt: cfg.prompt, Cwd: cfg.cwd, CwdSet: cfg.cwdSet,
		Yes: cfg.yes, Thoughts: cfg.thoughts, Diffs: cfg.diffs != "off", JSON: cfg.jsonOut,
		NoPersist: cfg.noPersist, KillGrace: cfg.limits().KillGrace, Signals: pr.process,
		NoColor: getenv("NO_COLOR") != "",
		Stdin:   stdin, Stdout: stdout, Stderr: stderr,
		FirstProblem: func(ctx context.Context) string {
			if cfg.apiKey != "" || cfg.script != "" {
				return ""
			}
			return signin.Unresolved(ctx, cfg.baseURL)
		},
	}
	servers, code, err := execInputs(cfg)
	if err != nil {
		return execclient.Fail(o, code, err)
	}
	o.Servers, o.Resume = servers, cfg.resume
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return execclient.Fail(o, 2, cfg.blame("log-file", err))
	}
	defer closeLog()
	a, err := newApp(cfg, log)
	if err != nil {
		return execclient.Fail(o, 1, err)
	}
	defer a.close()
	o.Logger, o.WaitMCP, o.Answered = log, a.agent.WaitMCP, a.modelAnswered
	return execclient.Run(ctx, a.agent, o)
}

// execInputs reads what the run needs before the agent starts: the MCP
// servers and, for --continue or --resume, the stored session's id. The
// exit code tells a usage error (2) from the store's state (1).
func execInputs(cfg *config) ([]acpsdk.McpServer, int, error) {
	servers, err := execclient.LoadMCPConfig(cfg.mcpConfig)
	if err != nil {
		return nil, 2, cfg.blame("mcp-config", err)
	}
	if !cfg.cont && cfg.resume == "" {
		return servers, 0, nil
	}
	// --continue's failures are usage errors (2), --resume's the store's
	// state (1): not there, or ambiguous.
	flagName, code := "--resume", 1
	if cfg.cont {
		flagName, code = "--continue", 2
	}
	dir, err := cfg.storeDir()
	if err != nil {
		return nil, code, fmt.Errorf("%s: %w", flagName, err)
	}
	if cfg.cont {
		cfg.resume, err = storecmd.Newest(dir, cfg.cwd)
	} else {
		cfg.resume, err = storecmd.Whole(dir, cfg.resume)
	}
	return servers, code, err
}

// modelAnswered reports whether session id's history holds a message of
// the model's. A session it cannot find holds none.
func (a *app) modelAnswered(id string) bool {
	s, err := a.sessions.Get(id)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(s.History(), func(m agent.Message) bool { return m.Role == agent.RoleAssistant })
}
