// Package logbridge is the agent's one log sink: Open makes the zap logger
// (stderr or --log-file, never stdout), and New hands libraries that log
// through log/slog (the ACP SDK) a *slog.Logger that writes to it, so every
// diagnostic lands in the same sink.
package logbridge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
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

// Open is the agent's logger: structured logs to stderr, or to the file
// logFile names (stdout belongs to the protocol), at level (debug, info,
// warn, error; "" for the default). headless: the output is for a person,
// so nothing is logged unless a level or a file is given. close flushes
// the file.
func Open(level, logFile string, headless bool, stderr io.Writer) (_ *zap.Logger, close func() error, _ error) {
	// Editors show stderr to the user (Emacs' acp.el as errors): by default
	// only warnings go there, while a log file gets the whole story.
	// The headless runner prints for a person, failures included: no log
	// line mixes into that unless asked for.
	if level == "" && headless && logFile == "" {
		return zap.NewNop(), func() error { return nil }, nil
	}
	if level == "" {
		level = "warn"
		if logFile != "" {
			level = "info"
		}
	}
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return nil, nil, fmt.Errorf("log level: %w", err)
	}
	sink := zapcore.AddSync(stderr)
	closeFn := func() error { return nil }
	if logFile != "" {
		// As untrusted opens files: a FIFO there would block the start
		// until a reader came, and only a regular file is a log.
		f, err := untrusted.Open(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		sink = zapcore.AddSync(f)
		// Flushed, not closed: SDK goroutines may still log a last line
		// after serving ends, and the process exit closes the file.
		closeFn = f.Sync
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(sink), lvl)
	return zap.New(core), closeFn, nil
}
