// Package logbridge hands libraries that log through log/slog (the ACP SDK)
// a *slog.Logger that writes to our zap logger, so every diagnostic lands in
// the same sink (stderr or --log-file) and never on stdout.
package logbridge

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a *slog.Logger that forwards to l.
func New(l *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{l: l})
}

type zapHandler struct {
	l *zap.Logger
}

func (h *zapHandler) Enabled(_ context.Context, lvl slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(lvl))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Resolve().Any()))
		return true
	})
	if ce := h.l.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, zap.Any(a.Key, a.Value.Resolve().Any()))
	}
	return &zapHandler{l: h.l.With(fields...)}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	return &zapHandler{l: h.l.Named(name)}
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
