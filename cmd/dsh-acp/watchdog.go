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

// guard is the running program's watchdog; nil when there is none (tests
// that build the app in-process, or a watchdog that could not start).
type guard struct {
	client *watchdog.Client
	marker string        // "NAME=1", added to every command's environment
	grace  time.Duration // the executor's kill grace, also the watchdog's
}

// startGuard launches the watchdog from the program's own binary. Without
// one the agent still works; commands may then outlive a killed agent.
func startGuard(log *zap.Logger, grace time.Duration) *guard {
	exe, err := os.Executable()
	if err != nil {
		log.Warn("no watchdog: commands may outlive the agent if it is killed", zap.Error(err))
		return nil
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	marker := markerPrefix + hex.EncodeToString(b) + "=1"
	c, err := watchdog.Start(watchdog.Options{
		Path:   exe,
		Args:   []string{"dsh-acp", watchdogMode, "-grace", grace.String(), "-marker", marker},
		Logger: log.Named("watchdog"),
	})
	if err != nil {
		log.Warn("no watchdog: commands may outlive the agent if it is killed", zap.Error(err))
		return nil
	}
	log.Debug("watchdog started", zap.Int("pid", c.Pid()))
	return &guard{client: c, marker: marker, grace: grace}
}

func (g *guard) watcher() executor.Watcher {
	if g == nil {
		return nil
	}
	return g.client
}

func (g *guard) env() []string {
	if g == nil {
		return nil
	}
	return []string{g.marker}
}

func (g *guard) close() error {
	if g == nil {
		return nil
	}
	// The executor ended everything already; the watchdog only checks.
	return g.client.Close(g.grace + 2*time.Second)
}

// runWatchdog is the hidden mode. Signals that would end the agent's
// process group are ignored: the watchdog ends when its pipe does.
func runWatchdog(args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	fs := flag.NewFlagSet(watchdogMode, flag.ContinueOnError)
	grace := fs.Duration("grace", executor.DefaultLimits().KillGrace, "")
	marker := fs.String("marker", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := watchdog.Serve(os.Stdin, watchdog.ServeOptions{Grace: *grace, Marker: *marker}); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp watchdog:", err)
		return 1
	}
	return 0
}
