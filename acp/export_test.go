package acp

import (
	"context"
	"testing"

	"github.com/dsh-acp/dsh-acp/acp/wire"
	"github.com/dsh-acp/dsh-acp/turn"
)

// WaitMCP returns when every MCP server of session sid has started or
// failed (a test's handshake: the agent itself never waits).
func WaitMCP(ctx context.Context, a *Agent, sid string) error {
	return a.opts.Turns.WaitMCP(ctx, sid)
}

// MCPGroups returns the process groups of session sid's stdio MCP servers.
func MCPGroups(a *Agent, sid string) []int {
	return a.opts.Turns.MCPGroups(sid)
}

// TestResourceBoundIsTheFrame: an embedded resource is bounded by the
// longest frame the wire reads, and the model is given all of it; a linked
// file gets the same bound.
func TestResourceBoundIsTheFrame(t *testing.T) {
	if turn.MaxResourceText != wire.MaxFrame {
		t.Errorf("turn.MaxResourceText is %d, wire.MaxFrame %d: they must be equal", turn.MaxResourceText, wire.MaxFrame)
	}
}
