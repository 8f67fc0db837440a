package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/execclient"
	"github.com/dsh-acp/dsh-acp/sessions/store"
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
		FirstProblem: func(ctx context.Context) string { return unresolvedEndpoint(ctx, cfg) },
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
	if cfg.cont {
		if cfg.resume, err = newestSession(cfg); err != nil {
			return nil, 2, err
		}
		return servers, 0, nil
	}
	if cfg.resume != "" {
		// Not there, or ambiguous: the store's state, not a usage error.
		if cfg.resume, err = storedID(cfg, cfg.resume); err != nil {
			return nil, 1, err
		}
	}
	return servers, 0, nil
}

// newestSession is the stored session --continue resumes: the newest of
// the working directory.
func newestSession(cfg *config) (string, error) {
	dir, err := cfg.storeDir()
	if err != nil {
		return "", fmt.Errorf("--continue: %w", err)
	}
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		return "", fmt.Errorf("--continue: the state directory: %w", err)
	}
	page, err := st.List(store.ListOptions{Cwd: cfg.cwd})
	if err != nil {
		return "", fmt.Errorf("--continue: %w", err)
	}
	if len(page.Sessions) == 0 {
		return "", fmt.Errorf("--continue: no stored session in %s to continue (start one with dsh-acp exec PROMPT)", cfg.cwd)
	}
	return page.Sessions[0].ID, nil
}

// storedID is the whole id of the stored session --resume names (whole,
// or a unique prefix of 6 characters or more).
func storedID(cfg *config, id string) (string, error) {
	st, err := openStoreFor(cfg)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	whole, err := resolveID(st, id)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	return whole, nil
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
