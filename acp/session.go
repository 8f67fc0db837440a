package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/sessions"
)

// Modes as the editor shows them. Where the sandbox is not offered the two
// modes keep the names they always had; beside Auto in sandbox, Auto is
// Full access, which is what it is.
var (
	modeAsk     = acpsdk.SessionMode{Id: acpsdk.SessionModeId(sessions.ModeAsk), Name: "Ask", Description: acpsdk.Ptr("Ask before running each command, unless an --allow rule or an earlier \"always\" covers it.")}
	modeAuto    = acpsdk.SessionMode{Id: acpsdk.SessionModeId(sessions.ModeAuto), Name: "Auto", Description: acpsdk.Ptr("Run commands without asking (--deny rules still apply).")}
	modeSandbox = acpsdk.SessionMode{Id: acpsdk.SessionModeId(sessions.ModeSandbox), Name: "Auto in sandbox", Description: acpsdk.Ptr("Run commands without asking, confined: they write only in the session's directory and a private temporary one, and read none of the agent's files (--deny rules still apply).")}
	modeFull    = acpsdk.SessionMode{Id: acpsdk.SessionModeId(sessions.ModeAuto), Name: "Full access", Description: acpsdk.Ptr("Run commands without asking and unconfined, with your full authority (--deny rules still apply).")}
)

// modes lists the modes the registry offers.
func (a *Agent) modes() []acpsdk.SessionMode {
	offered := a.opts.Sessions.Modes()
	sandbox := slices.Contains(offered, sessions.ModeSandbox)
	out := make([]acpsdk.SessionMode, 0, len(offered))
	for _, m := range offered {
		switch {
		case m == sessions.ModeAsk:
			out = append(out, modeAsk)
		case m == sessions.ModeSandbox:
			out = append(out, modeSandbox)
		case m == sessions.ModeAuto && sandbox:
			out = append(out, modeFull)
		case m == sessions.ModeAuto:
			out = append(out, modeAuto)
		}
	}
	return out
}

// modeList names the offered modes for an error message: "ask" or "auto".
func (a *Agent) modeList() string {
	offered := a.opts.Sessions.Modes()
	q := make([]string, len(offered))
	for i, m := range offered {
		q[i] = fmt.Sprintf("%q", m)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// NewSession registers a session for an absolute, existing cwd and its
// extra project roots (additionalDirectories).
func (a *Agent) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (resp acpsdk.NewSessionResponse, err error) {
	defer a.recoverTo("session/new", &err)
	if err := a.signInNeeded(ctx); err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	s, err := a.opts.Sessions.Create(p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	log := a.sessionLogger(s.ID)
	log.Info("session created", zap.String("cwd", s.Cwd), zap.Strings("roots", s.Roots()))
	a.startServers(s, p.McpServers)
	a.announceAfterReply(s.ID)
	return acpsdk.NewSessionResponse{
		SessionId:     acpsdk.SessionId(s.ID),
		Modes:         a.modeState(s),
		ConfigOptions: a.configOptions(ctx, s),
	}, nil
}

// Cancel returns at once: the SDK handles notifications one at a time, so
// waiting here would stall every session. The cancel itself was applied
// when the frame was read (see wire.Sessions), in the order the client wrote
// it; acting again here, on the SDK's later goroutine, could cancel a
// prompt written after it.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) (err error) {
	defer a.recoverTo("session/cancel", &err)
	defer a.wire.NotificationHandled()
	s, err := a.opts.Sessions.Get(string(p.SessionId))
	if err != nil {
		return toRequestError(err)
	}
	a.sessionLogger(s.ID).Info("cancel requested")
	return nil
}

// CloseSession cancels the turn, kills the session's background tasks and
// forgets the session.
func (a *Agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (resp acpsdk.CloseSessionResponse, err error) {
	defer a.recoverTo("session/close", &err)
	if err := a.opts.Sessions.Close(string(p.SessionId)); err != nil {
		return acpsdk.CloseSessionResponse{}, toRequestError(err)
	}
	a.wire.Forget(string(p.SessionId))
	a.announce.takePrompt(string(p.SessionId))
	a.opts.Turns.Forget(string(p.SessionId))
	a.sessionLogger(string(p.SessionId)).Info("session closed")
	return acpsdk.CloseSessionResponse{}, nil
}

// SetSessionMode switches between ask and auto; the change is announced as
// config_option_update for clients that follow config options.
func (a *Agent) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (resp acpsdk.SetSessionModeResponse, err error) {
	defer a.recoverTo("session/set_mode", &err)
	s, err := a.opts.Sessions.Get(string(p.SessionId))
	if err != nil {
		return acpsdk.SetSessionModeResponse{}, toRequestError(err)
	}
	if err := s.SetMode(sessions.Mode(p.ModeId)); err != nil {
		return acpsdk.SetSessionModeResponse{}, acpsdk.NewInvalidParams(map[string]any{
			"error": fmt.Sprintf("unknown mode %q: expected %s", p.ModeId, a.modeList()),
		})
	}
	a.sessionLogger(s.ID).Info("mode changed", zap.String("mode", string(p.ModeId)))
	a.sendUpdate(ctx, s.ID, acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{ConfigOptions: a.configOptions(ctx, s)}})
	return acpsdk.SetSessionModeResponse{}, nil
}

// codeResourceNotFound is ACP's "resource not found" error code.
const codeResourceNotFound = -32002

// codeInvalidParams is JSON-RPC's (and ACP's) "invalid params" code.
const codeInvalidParams = -32602

// toRequestError maps our sentinels to protocol errors at this one edge.
func toRequestError(err error) error {
	var re *acpsdk.RequestError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, sessions.ErrNotFound):
		return &acpsdk.RequestError{Code: codeResourceNotFound, Message: "Resource not found: " + err.Error()}
	case errors.Is(err, sessions.ErrInvalidCwd):
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	case errors.Is(err, sessions.ErrInvalidRoot):
		// One sentence naming the root, where an editor shows it.
		return &acpsdk.RequestError{Code: codeInvalidParams, Message: err.Error()}
	case errors.Is(err, sessions.ErrClosed):
		return &acpsdk.RequestError{Code: codeResourceNotFound, Message: "Resource not found: " + err.Error()}
	case errors.Is(err, sessions.ErrBadCursor):
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	case errors.Is(err, sessions.ErrBusy):
		// ACP defines no "busy" code. Not -32603: nothing failed here,
		// and a client may act on the answer. Not "resource not found"
		// (-32002): the session exists, and a client that forgot it on
		// that code would lose it. Invalid params: this session cannot
		// be had here now; the message, one sentence, says why and what
		// to do, and data names the session.
		var busy sessions.BusyError
		data := map[string]any{"reason": "session_live_elsewhere"}
		if errors.As(err, &busy) {
			data["sessionId"] = busy.ID
		}
		return &acpsdk.RequestError{Code: codeInvalidParams, Message: err.Error(), Data: data}
	case errors.Is(err, sessions.ErrUnusable):
		return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
	}
	return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
}
