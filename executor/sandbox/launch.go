package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// helperEnv marks a process as the sandbox helper and names its stage. The
// helper removes it before bash starts.
const helperEnv = "DSH_SANDBOX_HELPER"

// Helper stages (values of helperEnv).
const (
	stageZygote = "zygote" // forks a session's commands (Linux)
	stageProbe  = "probe"  // Probe's check that /proc can be mounted
)

// helperArg0 is argv[0] of the helper, so that ps shows what it is.
const helperArg0 = "dsh-acp-sandbox"

// LauncherOptions configure NewLauncher.
type LauncherOptions struct {
	// Executable is the binary re-executed as the helper; its main must
	// call HelperMain first. Empty means os.Executable().
	Executable string
	// Availability is what Probe found. NewLauncher refuses one that
	// confines nothing (see Require).
	Availability Availability
	// NoNamespaces confines with Landlock only even where namespaces are
	// available (tests, benchmarks, kernels where they misbehave).
	NoNamespaces bool
}

// Launcher starts confined commands: on Linux through a Zygote per policy,
// on macOS under sandbox-exec. It is safe for concurrent use and holds no
// resources itself.
type Launcher struct {
	exe   string
	avail Availability
	nons  bool
}

// NewLauncher checks that commands can be confined here.
func NewLauncher(opts LauncherOptions) (*Launcher, error) {
	if err := Require(opts.Availability); err != nil {
		return nil, err
	}
	exe := opts.Executable
	if exe == "" {
		var err error
		exe, err = os.Executable()
		if err != nil {
			return nil, fmt.Errorf("new launcher: %w", err)
		}
	}
	return &Launcher{exe: exe, avail: opts.Availability, nons: opts.NoNamespaces}, nil
}

// Namespaces reports whether commands run in namespaces of their zygote's
// (user, PID, mount and, unless the network is allowed, network): nothing
// they start outlives their session or the agent.
func (l *Launcher) Namespaces() bool {
	return !l.nons && l.avail.UserNS && l.avail.PIDNS
}

// cmdMarkerEnv marks every process of one command (its value is the
// command's id in its zygote): what left the command's session is found by
// it when the command's shell has ended. The zygote adds it.
const cmdMarkerEnv = "DSH_SANDBOX_CMD"

// commandEnv returns env without TMPDIR and the helper's markers, then with
// TMPDIR=tmp (unless empty).
func commandEnv(env []string, tmp string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, helperEnv+"=") || strings.HasPrefix(kv, cmdMarkerEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	if tmp != "" {
		out = append(out, "TMPDIR="+tmp)
	}
	return out
}
