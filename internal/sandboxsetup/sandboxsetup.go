// Package sandboxsetup decides, from the settings and the kernel's probe,
// whether commands are confined and how: the sandbox's confiner (set up at
// once when it was asked for, at first need otherwise) and whether the
// Auto in sandbox mode is offered. Nothing meant to be confined ever runs
// unconfined: a sandbox asked for and not to be had refuses the start.
package sandboxsetup

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// Options are the settings the sandbox follows.
type Options struct {
	// Sandbox is --sandbox: "on", "off", or "" (on where the probe finds it).
	Sandbox string
	// DefaultMode is --default-mode.
	DefaultMode string
	// All is the test switch that confines every command (why names it).
	All    bool
	Switch string
	// ConfigDir is made if missing: it is denied to confined commands, and
	// a missing denied path is no denial — a command could make it and
	// write a config.toml there. "" for none.
	ConfigDir string
	// TempParent, Read and Network are the confiner's (--sandbox-read,
	// --sandbox-network).
	TempParent string
	Read       []string
	Network    bool
	// Deny is what is the agent's and no command may read.
	Deny   []string
	Logger *zap.Logger
}

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
func setupSandbox(o Options) (sandboxSetup, error) {
	log := o.Logger
	all := o.All
	wanted := o.Sandbox == "on" || o.DefaultMode == "sandbox" || all
	if o.Sandbox == "off" && !all {
		log.Info("sandbox off (--sandbox off)")
		return sandboxSetup{}, nil
	}
	avail := sandbox.Probe(log.Named("sandbox"))
	if err := sandbox.Require(avail); err != nil {
		if wanted {
			return sandboxSetup{}, fmt.Errorf("the sandbox was asked for (%s) but cannot be had: %w", whyWanted(o), err)
		}
		log.Info("no sandbox here: the Auto in sandbox mode is not offered", zap.Error(err))
		return sandboxSetup{}, nil
	}
	makeConfigDir(o.ConfigDir, log)
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: avail})
	if err != nil {
		return sandboxSetup{}, fmt.Errorf("sandbox: %w", err)
	}
	var abs []string
	for _, d := range o.Deny {
		if d == "" {
			continue
		}
		if a, err := filepath.Abs(d); err == nil {
			abs = append(abs, a)
		}
	}
	c, err := sandbox.NewConfiner(sandbox.ConfinerOptions{
		Launcher:   l,
		TempParent: o.TempParent,
		Read:       o.Read,
		Deny:       abs,
		Network:    o.Network,
	})
	if err != nil {
		return sandboxSetup{}, fmt.Errorf("sandbox: %w", err)
	}
	if !l.Namespaces() {
		log.Warn("sandbox without a PID namespace: a command's setsid daemons can outlive it")
	}
	return sandboxSetup{confiner: c, offered: o.Sandbox != "off"}, nil
}

// makeConfigDir makes the config directory dir if it is missing (see
// Options.ConfigDir).
func makeConfigDir(dir string, log *zap.Logger) {
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Warn("config directory not made: confined commands may create it", zap.String("dir", dir), zap.Error(err))
	}
}

// Start sets up the sandbox: at once when it was asked for (an error
// refuses the start) or is off, when first needed otherwise (see
// sandbox.Lazy).
func Start(o Options) (*sandbox.Lazy, error) {
	log := o.Logger
	if o.Sandbox != "" || o.DefaultMode == "sandbox" || o.All {
		sb, err := setupSandbox(o)
		return sandbox.Prepared(sb.confiner, sb.offered), err
	}
	return sandbox.NewLazy(func() (*sandbox.Confiner, bool) {
		sb, err := setupSandbox(o)
		if err != nil {
			log.Warn("no sandbox: the Auto in sandbox mode is not offered", zap.Error(err))
			return nil, false
		}
		return sb.confiner, sb.offered
	}), nil
}

func whyWanted(o Options) string {
	switch {
	case o.Sandbox == "on":
		return "--sandbox on"
	case o.DefaultMode == "sandbox":
		return "--default-mode sandbox"
	case o.All:
		return o.Switch
	}
	return "?"
}
