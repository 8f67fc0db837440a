package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/acp/wire"
	"github.com/dsh-acp/dsh-acp/tools"
)

// elicitCreator is the part of the client connection that asks the user
// (elicitation/create).
type elicitCreator interface {
	UnstableCreateElicitation(ctx context.Context, r acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error)
	UnstableCompleteElicitation(ctx context.Context, n acpsdk.UnstableCompleteElicitationNotification) error
}

// elicitor is the client's elicitation/create as tools.Elicitor, for one
// session: the ask_user tool and the session's MCP servers ask through it.
type elicitor struct {
	sid       string
	c         elicitCreator
	form, url bool
}

// elicitorFor is the session's elicitor when the client shows forms or
// links; nil otherwise.
func (a *Agent) elicitorFor(sid string, conn any) tools.Elicitor {
	a.mu.Lock()
	form, url := a.elicitForm, a.elicitURL
	a.mu.Unlock()
	c, ok := conn.(elicitCreator)
	if !ok || (!form && !url) {
		return nil
	}
	return elicitor{sid: sid, c: c, form: form, url: url}
}

func (e elicitor) Modes() (form, url bool) { return e.form, e.url }

// errMode: a question of a kind the client did not declare (ACP: the agent
// must not send it).
var errMode = errors.New("the editor does not show this kind of question")

func (e elicitor) Elicit(ctx context.Context, q tools.Elicitation) (tools.Answer, error) {
	req, err := e.request(q)
	if err != nil {
		return tools.Answer{}, err
	}
	resp, err := e.c.UnstableCreateElicitation(ctx, req)
	if err != nil {
		return tools.Answer{}, fmt.Errorf("elicitation/create: %w", err)
	}
	switch {
	case resp.Accept != nil && resp.Accept.Action != tools.AnswerAccept:
		// The SDK reads any action it does not know as an accept: an
		// answer nobody gave must not reach the model as the user's.
		return tools.Answer{}, fmt.Errorf("elicitation/create: the editor answered with an unknown action %q", resp.Accept.Action)
	case resp.Accept != nil:
		return tools.Answer{Action: tools.AnswerAccept, Content: resp.Accept.Content}, nil
	case resp.Decline != nil:
		return tools.Answer{Action: tools.AnswerDecline}, nil
	}
	return tools.Answer{Action: tools.AnswerCancel}, nil
}

// request is q as elicitation/create's params; the scope travels in _meta
// until the wire puts it in place (wire.ScopeKey).
func (e elicitor) request(q tools.Elicitation) (acpsdk.UnstableCreateElicitationRequest, error) {
	meta := wire.ScopeMeta(wire.Scope{SessionID: e.sid, ToolCallID: q.ToolCallID})
	if q.URL != "" {
		if !e.url {
			return acpsdk.UnstableCreateElicitationRequest{}, errMode
		}
		return acpsdk.UnstableCreateElicitationRequest{Url: &acpsdk.UnstableCreateElicitationUrl{
			Meta: meta, Mode: "url", ElicitationId: e.elicitationID(q.ElicitationID), Message: q.Message, Url: q.URL,
		}}, nil
	}
	if !e.form {
		return acpsdk.UnstableCreateElicitationRequest{}, errMode
	}
	var schema acpsdk.UnstableElicitationSchema
	if len(q.Schema) > 0 {
		if err := json.Unmarshal(q.Schema, &schema); err != nil {
			return acpsdk.UnstableCreateElicitationRequest{}, fmt.Errorf("the form's schema: %w", err)
		}
	} else if err := json.Unmarshal([]byte(`{}`), &schema); err != nil {
		return acpsdk.UnstableCreateElicitationRequest{}, err
	}
	return acpsdk.UnstableCreateElicitationRequest{Form: &acpsdk.UnstableCreateElicitationForm{
		Meta: meta, Mode: "form", Message: q.Message, RequestedSchema: schema,
	}}, nil
}

// Complete tells the editor that the URL elicitation id is done.
func (e elicitor) Complete(ctx context.Context, id string) error {
	return e.c.UnstableCompleteElicitation(ctx, acpsdk.UnstableCompleteElicitationNotification{ElicitationId: e.elicitationID(id)})
}

// elicitationID is unique on the connection: ids are the session's own.
func (e elicitor) elicitationID(id string) acpsdk.UnstableElicitationId {
	return acpsdk.UnstableElicitationId(e.sid + "/" + id)
}
