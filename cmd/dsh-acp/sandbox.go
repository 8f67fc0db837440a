package main

import (
	"fmt"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// testExecutorEnv is the test switch that confines every command, whatever
// the session's mode: the transcript suite runs against the sandboxed
// executor with DSH_TEST_EXECUTOR=sandbox. It only ever confines more, and
// like --sandbox on it refuses to start where there is no sandbox.
const testExecutorEnv = "DSH_TEST_EXECUTOR"

// sandboxSetup is what the probe and the flags decided.
type sandboxSetup struct {
	// confiner confines commands; nil when none can or may be.
	confiner *sandbox.Confiner
	// offered: sessions may be in the Auto in sandbox mode.
	offered bool
	// all: every command is confined (the test switch).
	all bool
}

// setupSandbox probes the kernel (once, logged) unless the sandbox is off,
// and refuses to go on when the sandbox was asked for — --sandbox on,
// --default-mode sandbox or the test switch — and cannot be had: nothing
// ever runs unconfined that was meant to be confined. deny is what is the
// agent's and no command may read.
func setupSandbox(cfg *config, log *zap.Logger, deny []string) (sandboxSetup, error) {
	getenv := cfg.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	all := getenv(testExecutorEnv) == "sandbox"
	wanted := cfg.sandbox == "on" || cfg.defaultMode == "sandbox" || all
	if cfg.sandbox == "off" && !all {
		log.Info("sandbox off (--sandbox off)")
		return sandboxSetup{}, nil
	}
	avail := sandbox.Probe(log.Named("sandbox"))
	if err := sandbox.Require(avail); err != nil {
		if wanted {
			return sandboxSetup{}, fmt.Errorf("the sandbox was asked for (%s) but cannot be had: %w", whyWanted(cfg, all), err)
		}
		log.Info("no sandbox here: the Auto in sandbox mode is not offered", zap.Error(err))
		return sandboxSetup{}, nil
	}
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: avail})
	if err != nil {
		return sandboxSetup{}, fmt.Errorf("sandbox: %w", err)
	}
	var abs []string
	for _, d := range deny {
		if d == "" {
			continue
		}
		if a, err := filepath.Abs(d); err == nil {
			abs = append(abs, a)
		}
	}
	c, err := sandbox.NewConfiner(sandbox.ConfinerOptions{
		Launcher:   l,
		TempParent: cfg.spillDir,
		Read:       cfg.sandboxRead,
		Deny:       abs,
		Network:    cfg.sandboxNetwork,
	})
	if err != nil {
		return sandboxSetup{}, fmt.Errorf("sandbox: %w", err)
	}
	if !l.Namespaces() {
		log.Warn("sandbox without a PID namespace: a command's setsid daemons can outlive it")
	}
	return sandboxSetup{confiner: c, offered: cfg.sandbox != "off", all: all}, nil
}

// lazySandbox is the sandbox set up when first needed: the probe re-runs
// the binary in new namespaces (milliseconds), which the editor's
// initialize answer should not wait for. What needs its outcome — the modes
// the first session is offered, a confined command — sets it up then. Where
// the sandbox was asked for, the setup runs before serving (startSandbox)
// so that dsh-acp can refuse to start.
type lazySandbox struct {
	// confineAll: the test switch confines every command (decided before
	// serving).
	confineAll bool

	// once runs the setup; setup is valid after it.
	once  sync.Once
	run   func() sandboxSetup
	setup sandboxSetup
}

var _ executor.Confiner = (*lazySandbox)(nil)

// startSandbox sets up the sandbox: at once when it was asked for (an
// error refuses the start) or is off, in the background otherwise.
func startSandbox(cfg *config, log *zap.Logger, deny []string) (*lazySandbox, error) {
	all := cfg.getenv != nil && cfg.getenv(testExecutorEnv) == "sandbox"
	l := &lazySandbox{confineAll: all}
	if cfg.sandbox != "" || cfg.defaultMode == "sandbox" || all {
		var err error
		l.once.Do(func() { l.setup, err = setupSandbox(cfg, log, deny) })
		return l, err
	}
	l.run = func() sandboxSetup {
		sb, err := setupSandbox(cfg, log, deny)
		if err != nil {
			log.Warn("no sandbox: the Auto in sandbox mode is not offered", zap.Error(err))
			return sandboxSetup{}
		}
		return sb
	}
	return l, nil
}

func (l *lazySandbox) wait() sandboxSetup {
	l.once.Do(func() { l.setup = l.run() })
	return l.setup
}

// offered reports whether sessions may be in the Auto in sandbox mode.
func (l *lazySandbox) offered() bool { return l.wait().offered }

// Start confines one command (executor.Confiner).
func (l *lazySandbox) Start(c executor.Confinement) (executor.Process, error) {
	sb := l.wait()
	if sb.confiner == nil {
		return nil, executor.ErrNoSandbox
	}
	return sb.confiner.Start(c)
}

// Release lets go of what was kept for a closed session (executor.Confiner).
func (l *lazySandbox) Release(owner string) {
	if sb := l.wait(); sb.confiner != nil {
		sb.confiner.Release(owner)
	}
}

// Close ends the sandbox (executor.Confiner); one never set up stays so.
func (l *lazySandbox) Close() error {
	l.once.Do(func() {})
	if sb := l.setup; sb.confiner != nil {
		return sb.confiner.Close()
	}
	return nil
}

func whyWanted(cfg *config, all bool) string {
	switch {
	case cfg.sandbox == "on":
		return "--sandbox on"
	case cfg.defaultMode == "sandbox":
		return "--default-mode sandbox"
	case all:
		return testExecutorEnv + "=sandbox"
	}
	return "?"
}
