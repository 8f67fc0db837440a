package acp

import (
	"context"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/sessions"
)

var modes = []acpsdk.SessionMode{
	{Id: acpsdk.SessionModeId(sessions.ModeAsk), Name: "Ask", Description: acpsdk.Ptr("Ask before running each command, unless an --allow rule or an earlier \"always\" covers it.")},
	{Id: acpsdk.SessionModeId(sessions.ModeAuto), Name: "Auto", Description: acpsdk.Ptr("Run commands without asking (--deny rules still apply).")},
}

// NewSession registers a session for an absolute, existing cwd.
func (a *Agent) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (resp acpsdk.NewSessionResponse, err error) {
	defer a.recoverTo("session/new", &err)
	s, err := a.opts.Sessions.Create(p.Cwd)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	log := a.sessionLogger(s.ID)
	log.Info("session created", zap.String("cwd", s.Cwd))
	a.startServers(s, p.McpServers)
	a.announceAfterReply(s.ID)
	return acpsdk.NewSessionResponse{
		SessionId:     acpsdk.SessionId(s.ID),
		Modes:         modeState(s),
		ConfigOptions: a.configOptions(ctx, s),
	}, nil
}

// Cancel returns at once: the SDK handles notifications one at a time, so
// waiting here would stall every session. The cancel itself was applied
// when the frame was read (order.cancelRead), in the order the client wrote
// it; acting again here, on the SDK's later goroutine, could cancel a
// prompt written after it.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) (err error) {
	defer a.recoverTo("session/cancel", &err)
	defer a.notificationHandled()
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
	a.order.forget(string(p.SessionId))
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
			"error": fmt.Sprintf("unknown mode %q: expected %q or %q", p.ModeId, sessions.ModeAsk, sessions.ModeAuto),
		})
	}
	a.sessionLogger(s.ID).Info("mode changed", zap.String("mode", string(p.ModeId)))
	a.sendUpdate(ctx, s.ID, acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{ConfigOptions: a.configOptions(ctx, s)}})
	return acpsdk.SetSessionModeResponse{}, nil
}

// codeResourceNotFound is ACP's "resource not found" error code.
const codeResourceNotFound = -32002

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
	case errors.Is(err, sessions.ErrClosed):
		return &acpsdk.RequestError{Code: codeResourceNotFound, Message: "Resource not found: " + err.Error()}
	case errors.Is(err, sessions.ErrBadCursor):
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	case errors.Is(err, sessions.ErrBusy), errors.Is(err, sessions.ErrUnusable):
		return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
	}
	return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
}
