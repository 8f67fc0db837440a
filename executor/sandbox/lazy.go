package sandbox

import (
	"sync"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Lazy is an executor.Confiner whose Confiner is set up when first needed:
// the probe re-runs the binary in new namespaces (milliseconds), which an
// editor's first answer should not wait for. What needs the outcome — the
// modes a session is offered, a confined command — sets it up then.
type Lazy struct {
	// once runs setup; c and offered are valid after it.
	once    sync.Once
	setup   func() (c *Confiner, offered bool)
	c       *Confiner // nil: no sandbox here, or none wanted
	offered bool
}

var _ executor.Confiner = (*Lazy)(nil)

// NewLazy returns a Lazy that calls setup once, at the first need. Setup
// returns the Confiner (nil when there is no sandbox, and commands that
// must be confined then fail with executor.ErrNoSandbox) and whether
// sessions may be offered the Auto in sandbox mode.
func NewLazy(setup func() (c *Confiner, offered bool)) *Lazy {
	return &Lazy{setup: setup}
}

// Prepared returns a Lazy whose setup has already run, with this outcome.
func Prepared(c *Confiner, offered bool) *Lazy {
	l := &Lazy{}
	l.once.Do(func() { l.c, l.offered = c, offered })
	return l
}

func (l *Lazy) confiner() *Confiner {
	l.once.Do(func() { l.c, l.offered = l.setup() })
	return l.c
}

// Offered reports whether sessions may be in the Auto in sandbox mode,
// setting the sandbox up if it was not yet.
func (l *Lazy) Offered() bool {
	l.confiner()
	return l.offered
}

// Start confines one command (executor.Confiner).
func (l *Lazy) Start(x executor.Confinement) (executor.Process, error) {
	c := l.confiner()
	if c == nil {
		return nil, executor.ErrNoSandbox
	}
	return c.Start(x)
}

// Release lets go of what was kept for a closed session (executor.Confiner).
func (l *Lazy) Release(owner string) {
	if c := l.confiner(); c != nil {
		c.Release(owner)
	}
}

// Close ends the sandbox (executor.Confiner); one never set up stays so.
func (l *Lazy) Close() error {
	l.once.Do(func() {})
	if l.c != nil {
		return l.c.Close()
	}
	return nil
}

// Files confines file operations (executor.FileConfiner).
func (l *Lazy) Files(a executor.FileAccess) (executor.Files, error) {
	c := l.confiner()
	if c == nil {
		return nil, executor.ErrNoSandbox
	}
	return c.Files(a)
}
