package acp

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newSlogger bridges the SDK's *slog.Logger to our zap logger, so its
// diagnostics land in the same sink (stderr or --log-file), never stdout.
func newSlogger(l *zap.Logger) *slog.Logger {
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
