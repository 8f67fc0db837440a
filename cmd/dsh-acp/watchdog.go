package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/agentdir"
	"github.com/dsh-acp/dsh-acp/executor/watchdog"
)

// watchdogMode is the hidden first argument that makes the binary the
// watchdog of the agent that started it (see executor/watchdog).
const watchdogMode = "__dsh-acp-watchdog"

// markerPrefix starts the name of the variable that marks every command of
// one agent run, so its watchdog can find what escaped the command's session.
// The name, not the value, is unique per run: an agent run by a command of
// another keeps both marks.
const markerPrefix = "DSH_ACP_RUN_"

// guard is the running program's watchdog (started when the first
// process group is registered: see watchdog.Lazy) and the marker of its
// commands; nil when there is none (tests that build the app in-process,
// or no executable to re-run).
type guard struct {
	*watchdog.Lazy
	marker string        // "NAME=1", added to every command's environment
	grace  time.Duration // the executor's kill grace, also the watchdog's
}

var _ executor.Watcher = (*guard)(nil)

func newGuard(log *zap.Logger, grace time.Duration, tmp string) *guard {
	exe, err := os.Executable()
	if err != nil {
		log.Warn("no watchdog: commands may outlive the agent if it is killed", zap.Error(err))
		return nil
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	marker := markerPrefix + hex.EncodeToString(b) + "=1"
	args := []string{"dsh-acp", watchdogMode, "-grace", grace.String(), "-marker", marker}
	if self, err := agentdir.Self(); err == nil {
		args = append(args, "-agent", self.String(), "-tmpdir", tmp)
	}
	dog := watchdog.NewLazy(watchdog.Options{Path: exe, Args: args, Logger: log.Named("watchdog")})
	return &guard{Lazy: dog, marker: marker, grace: grace}
}

func (g *guard) watcher() executor.Watcher {
	if g == nil {
		return nil
	}
	return g
}

// runMarker is the executor's Options.RunMarker: empty without a watchdog.
func (g *guard) runMarker() string {
	if g == nil {
		return ""
	}
	return g.marker
}

func (g *guard) close() error {
	if g == nil {
		return nil
	}
	// The executor ended everything already; the watchdog only checks.
	return g.Close(g.grace + 2*time.Second)
}

// runWatchdog is the hidden mode. Signals that would end the agent's
// process group are ignored: the watchdog ends when its pipe does. Once
// the agent's commands are gone it removes the agent's temporary
// directories (-agent, -tmpdir: see agentdir), which an agent that was
// killed could not; one that exited removed them already.
func runWatchdog(args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	fs := flag.NewFlagSet(watchdogMode, flag.ContinueOnError)
	grace := fs.Duration("grace", executor.DefaultLimits().KillGrace, "")
	marker := fs.String("marker", "", "")
	agent := fs.String("agent", "", "")
	tmp := fs.String("tmpdir", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	code := 0
	if err := watchdog.Serve(os.Stdin, watchdog.ServeOptions{Grace: *grace, Marker: *marker}); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp watchdog:", err)
		code = 1
	}
	if a, err := agentdir.Parse(*agent); err == nil && *tmp != "" {
		if _, err := agentdir.Remove(*tmp, func(b agentdir.Agent) bool { return b == a }); err != nil {
			fmt.Fprintln(os.Stderr, "dsh-acp watchdog:", err)
			code = 1
		}
	}
	return code
}
