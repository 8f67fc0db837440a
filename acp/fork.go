package acp

import (
	"context"
	"encoding/json"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// UnstableForkSession answers session/fork: a new session that goes on
// from where the original is (sessions.Registry.Fork decides what that
// is), with the MCP servers the request gives, announced like a new one.
func (a *Agent) UnstableForkSession(ctx context.Context, p acpsdk.UnstableForkSessionRequest) (resp acpsdk.UnstableForkSessionResponse, err error) {
	defer a.recoverTo("session/fork", &err)
	servers, err := convertJSON[[]acpsdk.McpServer](p.McpServers)
	if err != nil {
		return resp, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcpServers: %v", err)})
	}
	s, err := a.opts.Sessions.Fork(string(p.SessionId), p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return resp, toRequestError(err)
	}
	a.sessionLogger(s.ID).Info("session forked", zap.String("from", string(p.SessionId)), zap.String("cwd", s.Cwd))
	a.startServers(s, servers)
	a.announce.madeLive(s.ID)
	a.announce.add(s.ID, func() {
		a.announceCommands(s.ID)
		// The editor's history shows the fork under its own title.
		a.sendUpdate(context.Background(), s.ID, sessionInfo(s))
	})
	opts, err := convertJSON[[]acpsdk.UnstableSessionConfigOption](a.configOptions(ctx, s))
	if err != nil {
		return resp, toRequestError(err)
	}
	return acpsdk.UnstableForkSessionResponse{SessionId: acpsdk.SessionId(s.ID), Modes: a.modeState(s), ConfigOptions: opts}, nil
}

// convertJSON is v as another SDK type of the same wire shape (the
// unstable methods have types of their own for what the stable ones
// share).
func convertJSON[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}
