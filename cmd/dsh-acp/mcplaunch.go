package main

import (
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// mcpLaunchers gives each session the launcher of its stdio MCP servers:
// they start as services of that session in the executor, which owns every
// process of the agent, so they end with the session (KillOwned), with the
// agent and, if the agent is killed, by the watchdog — their setsid
// children included (the executor marks them). It lives here because
// neither package may know the other (internal/layering).
func mcpLaunchers(ex *executor.Local) func(sessionID string) mcptool.Launcher {
	return func(id string) mcptool.Launcher { return mcpLauncher{ex: ex, owner: id} }
}

type mcpLauncher struct {
	ex    *executor.Local
	owner string
}

func (m mcpLauncher) Launch(spec mcptool.Launch) (mcptool.Process, error) {
	svc, err := m.ex.StartService(executor.ServiceSpec{Owner: m.owner, Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env, Stderr: spec.Stderr})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return svc, nil
}
