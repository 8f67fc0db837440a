package mcptool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// asker answers every question with accept {sure: true} and keeps them.
type asker struct {
	form, url bool
	mu        sync.Mutex
	asked     []tools.Elicitation
}

func (a *asker) Modes() (bool, bool) { return a.form, a.url }

func (a *asker) Elicit(_ context.Context, q tools.Elicitation) (tools.Answer, error) {
	a.mu.Lock()
	a.asked = append(a.asked, q)
	a.mu.Unlock()
	return tools.Answer{Action: tools.AnswerAccept, Content: map[string]any{"sure": true}}, nil
}

// TestElicitationPassedThrough: a server's question reaches the user,
// naming the server and the call it serves, and the answer reaches the
// server — asked in the answer to the call (MCP 2026-07-28) or by a
// request of its own (older protocols). Without a user to ask, the server
// learns that the client asks nothing.
func TestElicitationPassedThrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ version, tool string }{
		{"", "ask_new"},
		{"2025-06-18", "ask_new"},
		{"2025-06-18", "ask_old"},
	} {
		t.Run(tc.tool+"/"+tc.version, func(t *testing.T) {
			ctx := testutil.Context(t)
			a := &asker{form: true}
			opts := mcptool.Options{Ask: a}
			mcptool.SetProtocolVersion(&opts, tc.version)
			h := start(t, []mcptool.ServerConfig{stdio(t, "q", "ask")}, opts)
			h.started(ctx, t)
			o := h.tool(t, "mcp__q__"+tc.tool).Invoke(tools.WithCallID(ctx, "call_7"), nil)
			if o.Text != "accept true" || o.IsError {
				t.Fatalf("result = %+v, want the answer the user gave", o)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.asked) != 1 {
				t.Fatalf("asked %d times, want once", len(a.asked))
			}
			q := a.asked[0]
			if q.Message != `The MCP server "q" asks: Sure?` || q.ToolCallID != "call_7" || q.URL != "" || len(q.Schema) == 0 {
				t.Errorf("question = %+v", q)
			}
		})
	}
	t.Run("no user to ask", func(t *testing.T) {
		ctx := testutil.Context(t)
		opts := mcptool.Options{}
		mcptool.SetProtocolVersion(&opts, "2025-06-18")
		h := start(t, []mcptool.ServerConfig{stdio(t, "q", "ask")}, opts)
		h.started(ctx, t)
		o := h.tool(t, "mcp__q__ask_old").Invoke(ctx, nil)
		if o.Text != "could not ask: client does not support elicitation" {
			t.Errorf("result = %q", o.Text)
		}
	})
}
