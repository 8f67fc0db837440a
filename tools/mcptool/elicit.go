package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// offerElicitation makes the client pass the server's elicitation
// requests to the user, in the modes the editor shows, when there is a
// user to ask.
func (v *server) offerElicitation(o *mcp.ClientOptions) {
	ask := v.s.opts.Ask
	if ask == nil {
		return
	}
	form, url := ask.Modes()
	if !form && !url {
		return
	}
	caps := &mcp.ElicitationCapabilities{}
	if form {
		caps.Form = &mcp.FormElicitationCapabilities{}
	}
	if url {
		caps.URL = &mcp.URLElicitationCapabilities{}
	}
	o.Capabilities.Elicitation = caps
	o.ElicitationHandler = v.elicit
	if url {
		o.ElicitationCompleteHandler = v.elicitationComplete
	}
}

// elicit asks the user what the server asks, and gives the server the
// answer. The user sees which server asks.
func (v *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	if p == nil {
		return nil, errors.New("elicitation/create without params")
	}
	// A server of MCP 2026-07-28 asks in its answer to the call, so ctx is
	// the call's; an older one asks on its own request.
	call := tools.CallID(ctx)
	if call == "" {
		call = v.onlyCall()
	}
	q := tools.Elicitation{
		ToolCallID: call,
		Message:    fmt.Sprintf("The MCP server %q asks: %s", v.cfg.Name, p.Message),
	}
	if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
		if p.ElicitationID == "" || p.URL == "" {
			return nil, errors.New("a URL elicitation needs an elicitationId and a url")
		}
		q.URL, q.ElicitationID = p.URL, v.elicitationID(p.ElicitationID)
	} else if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("requestedSchema: %w", err)
		}
		q.Schema = b
	}
	v.log.Info("mcp server asks the user", zap.String("mode", p.Mode), zap.String("tool_call", q.ToolCallID))
	a, err := v.s.opts.Ask.Elicit(ctx, q)
	if err != nil {
		v.log.Warn("mcp elicitation failed", zap.Error(err))
		return nil, err
	}
	return &mcp.ElicitResult{Action: a.Action, Content: a.Content}, nil
}

// elicitationComplete tells the editor that the server's URL elicitation
// is done.
func (v *server) elicitationComplete(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	c, ok := v.s.opts.Ask.(interface {
		Complete(ctx context.Context, elicitationID string) error
	})
	if !ok || req.Params == nil || req.Params.ElicitationID == "" {
		return
	}
	if err := c.Complete(ctx, v.elicitationID(req.Params.ElicitationID)); err != nil {
		v.log.Warn("mcp elicitation complete not passed on", zap.Error(err))
	}
}

// elicitationID is a server's elicitation id as the editor is given it:
// unique among the session's servers.
func (v *server) elicitationID(id string) string {
	return "mcp:" + v.cfg.Name + "/" + id
}

// track counts a call in flight under its tool call id until the
// returned func is called.
func (v *server) track(id string) func() {
	if id == "" {
		return func() {}
	}
	v.mu.Lock()
	if v.calls == nil {
		v.calls = map[string]int{}
	}
	v.calls[id]++
	v.mu.Unlock()
	return func() {
		v.mu.Lock()
		if v.calls[id]--; v.calls[id] <= 0 {
			delete(v.calls, id)
		}
		v.mu.Unlock()
	}
}

// onlyCall is the tool call id of the one call in flight; "" when there
// are none or several (MCP does not say which call a request serves).
func (v *server) onlyCall() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.calls) != 1 {
		return ""
	}
	for id := range v.calls {
		return id
	}
	return ""
}
