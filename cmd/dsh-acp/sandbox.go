package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/userdir"
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
}

// setupSandbox probes the kernel (once, logged) unless the sandbox is off,
// and refuses to go on when the sandbox was asked for — --sandbox on,
// --default-mode sandbox or the test switch — and cannot be had: nothing
// ever runs unconfined that was meant to be confined. deny is what is the
// agent's and no command may read.
func setupSandbox(cfg *config, log *zap.Logger, deny []string) (sandboxSetup, error) {
	all := testSwitchSandbox(cfg)
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
	makeConfigDir(cfg, log)
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
	return sandboxSetup{confiner: c, offered: cfg.sandbox != "off"}, nil
}

// makeConfigDir makes the config directory if it is missing: it is denied
// to confined commands (agentFiles), and a missing denied path is no
// denial — a command could make it and write a config.toml there.
func makeConfigDir(cfg *config, log *zap.Logger) {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, cfg.getenv)
	if err != nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Warn("config directory not made: confined commands may create it", zap.String("dir", dir), zap.Error(err))
	}
}

// testSwitchSandbox reports whether the test switch confines every
// command (DSH_TEST_EXECUTOR=sandbox).
func testSwitchSandbox(cfg *config) bool {
	return cfg.getenv != nil && cfg.getenv(testExecutorEnv) == "sandbox"
}

// startSandbox sets up the sandbox: at once when it was asked for (an
// error refuses the start) or is off, when first needed otherwise (see
// sandbox.Lazy).
func startSandbox(cfg *config, log *zap.Logger, deny []string) (*sandbox.Lazy, error) {
	if cfg.sandbox != "" || cfg.defaultMode == "sandbox" || testSwitchSandbox(cfg) {
		sb, err := setupSandbox(cfg, log, deny)
		return sandbox.Prepared(sb.confiner, sb.offered), err
	}
	return sandbox.NewLazy(func() (*sandbox.Confiner, bool) {
		sb, err := setupSandbox(cfg, log, deny)
		if err != nil {
			log.Warn("no sandbox: the Auto in sandbox mode is not offered", zap.Error(err))
			return nil, false
		}
		return sb.confiner, sb.offered
	}), nil
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
