package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// startServers starts a session's MCP servers (session/new; load, resume
// and fork call it too) and returns at once; see turn.Runner.StartServers.
func (a *Agent) startServers(s *sessions.Session, list []acpsdk.McpServer) {
	a.opts.Turns.StartServers(s, mcpConfigs(list), a.elicitorFor(s.ID, a.client()))
}

// mcpConfigs maps the editor's list. SSE servers (deprecated; Zed never
// sends them) and ACP-channel servers keep their transport name, which
// mcptool refuses with a per-server error.
func mcpConfigs(list []acpsdk.McpServer) []mcptool.ServerConfig {
	out := make([]mcptool.ServerConfig, 0, len(list))
	for _, srv := range list {
		var c mcptool.ServerConfig
		switch {
		case srv.Stdio != nil:
			c = mcptool.ServerConfig{Name: srv.Stdio.Name, Transport: mcptool.TransportStdio, Command: srv.Stdio.Command, Args: srv.Stdio.Args}
			for _, e := range srv.Stdio.Env {
				c.Env = append(c.Env, mcptool.NameValue{Name: e.Name, Value: e.Value})
			}
		case srv.Http != nil:
			c = mcptool.ServerConfig{Name: srv.Http.Name, Transport: mcptool.TransportHTTP, URL: srv.Http.Url, Headers: headers(srv.Http.Headers)}
		case srv.Sse != nil:
			c = mcptool.ServerConfig{Name: srv.Sse.Name, Transport: mcptool.TransportSSE, URL: srv.Sse.Url, Headers: headers(srv.Sse.Headers)}
		case srv.Acp != nil:
			c = mcptool.ServerConfig{Name: srv.Acp.Name, Transport: "acp"}
		}
		out = append(out, c)
	}
	return out
}

func headers(hs []acpsdk.HttpHeader) []mcptool.NameValue {
	var out []mcptool.NameValue
	for _, h := range hs {
		out = append(out, mcptool.NameValue{Name: h.Name, Value: h.Value})
	}
	return out
}

// WaitMCP returns when every MCP server of session id has either listed its
// tools or failed, or when ctx ends (see turn.Runner.WaitMCP).
func (a *Agent) WaitMCP(ctx context.Context, id string) error {
	return a.opts.Turns.WaitMCP(ctx, id)
}
