package watchdog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Lazy is a watchdog started when the first session is registered: a
// program that never runs a command runs no second process, and its first
// answer never waits for one to exec. Without a watchdog (it could not
// start) the program still works; its commands may then outlive it if it
// is killed. It implements executor.Watcher.
type Lazy struct {
	opts Options

	// once starts the watchdog; client is set by it, nil if it could not
	// start.
	once   sync.Once
	client *Client
}

// NewLazy returns a Lazy that starts the watchdog with opts when needed.
func NewLazy(opts Options) *Lazy {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Lazy{opts: opts}
}

// started starts the watchdog once and returns it (nil if it could not
// start).
func (l *Lazy) started() *Client {
	l.once.Do(func() {
		c, err := Start(l.opts)
		if err != nil {
			l.opts.Logger.Warn("no watchdog: commands may outlive the agent if it is killed", zap.Error(err))
			return
		}
		l.opts.Logger.Debug("watchdog started", zap.Int("pid", c.Pid()))
		l.client = c
	})
	return l.client
}

// Started registers session sid, starting the watchdog if it was not yet.
func (l *Lazy) Started(sid int) {
	if c := l.started(); c != nil {
		c.Started(sid)
	}
}

// Ended says the process group of session sid is gone (see Client.Ended).
func (l *Lazy) Ended(sid int) {
	if c := l.started(); c != nil {
		c.Ended(sid)
	}
}

// Close closes a started watchdog (see Client.Close); one never started
// stays so, and nothing registers after.
func (l *Lazy) Close(timeout time.Duration) error {
	l.once.Do(func() {})
	if l.client == nil {
		return nil
	}
	return l.client.Close(timeout)
}
