package acp

import "context"

// WaitMCP returns when every MCP server of session sid has started or
// failed (a test's handshake: the agent itself never waits).
func WaitMCP(ctx context.Context, a *Agent, sid string) error {
	s, err := a.opts.Sessions.Get(sid)
	if err != nil {
		return err
	}
	if m := mcpOf(s); m != nil {
		return m.servers.WaitStarted(ctx)
	}
	return nil
}

// MCPGroups returns the process groups of session sid's stdio MCP servers.
func MCPGroups(a *Agent, sid string) []int {
	s, err := a.opts.Sessions.Get(sid)
	if err != nil {
		return nil
	}
	if m := mcpOf(s); m != nil {
		return m.servers.Groups()
	}
	return nil
}
