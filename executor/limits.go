package executor

import "time"

// Limits are the bounds every command runs under. cmd builds one value and
// hands the same one to the executor and to the tools, so what the model is
// told (the timeouts in the bash description) is what the executor enforces.
// DefaultLimits is the only place their default values are written.
type Limits struct {
	// DefaultTimeout bounds a foreground run whose Spec has none. Zero means
	// DefaultLimits' (120s).
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeout a foreground run may have; larger
	// requests are clamped to it. Zero means DefaultLimits' (600s). Must be
	// >= DefaultTimeout.
	MaxTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL to a process group.
	// Zero means DefaultLimits' (3s).
	KillGrace time.Duration
	// LeftoverGrace is how long a call keeps reading after the shell exited
	// while something it left behind (`sleep 100 &`) still holds its output
	// pipes; then that leftover group is terminated. Zero means
	// DefaultLimits' (300ms).
	LeftoverGrace time.Duration
	// TailBytes is how many bytes of each stream are kept in memory (the
	// tail); a stream longer than that is spilled in full to a file. Zero
	// means DefaultLimits' (32,000).
	TailBytes int
	// UnreadBytes bounds, per stream, the output of a background task that
	// no Read has fetched yet; older unread bytes are dropped (they stay in
	// the spill file), and a Read returns at most this much per stream.
	// Zero means DefaultLimits' (32,000, as TailBytes: a read hands the
	// model at most as much of a stream as a foreground result does).
	UnreadBytes int
	// CredentialEnv names the variables that hold the model API key, in the
	// order they are read (the first one set wins). They are removed from
	// every command's environment whatever KeepEnv says. Nil means
	// DefaultLimits' (DSH_API_KEY, DEEPSEEK_API_KEY).
	CredentialEnv []string
}

// DefaultLimits returns the limits a command line without flags gets.
func DefaultLimits() Limits {
	return Limits{
		DefaultTimeout: 120 * time.Second,
		MaxTimeout:     600 * time.Second,
		KillGrace:      3 * time.Second,
		LeftoverGrace:  300 * time.Millisecond,
		TailBytes:      32_000,
		UnreadBytes:    32_000,
		CredentialEnv:  []string{"DSH_API_KEY", "DEEPSEEK_API_KEY"},
	}
}

// WithDefaults fills the zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	def := DefaultLimits()
	orDefault(&l.DefaultTimeout, def.DefaultTimeout)
	orDefault(&l.MaxTimeout, def.MaxTimeout)
	orDefault(&l.KillGrace, def.KillGrace)
	orDefault(&l.LeftoverGrace, def.LeftoverGrace)
	orDefault(&l.TailBytes, def.TailBytes)
	orDefault(&l.UnreadBytes, def.UnreadBytes)
	if l.CredentialEnv == nil {
		l.CredentialEnv = def.CredentialEnv
	}
	return l
}

// orDefault sets *v to def when it is the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Timeout is the effective timeout of a foreground run that asked for
// requested: zero means the default, and more than the maximum is clamped to
// it. A negative request is returned as is (resolve rejects it).
func (l Limits) Timeout(requested time.Duration) time.Duration {
	switch {
	case requested == 0:
		return l.DefaultTimeout
	case requested > l.MaxTimeout:
		return l.MaxTimeout
	}
	return requested
}
