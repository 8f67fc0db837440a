package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
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

// guard is the running program's watchdog; nil when there is none (tests
// that build the app in-process, or no executable to re-run). It starts
// when the first process group is registered: an agent that never runs a
// command runs no second process, and the editor's initialize answer never
// waits for one to exec.
type guard struct {
	marker string        // "NAME=1", added to every command's environment
	grace  time.Duration // the executor's kill grace, also the watchdog's
	tmp    string        // where the agent's temporary directories are (agentdir)
	exe    string
	log    *zap.Logger

	// once starts the watchdog; client is set by it, nil if it could not
	// start.
	once   sync.Once
	client *watchdog.Client
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
	return &guard{marker: markerPrefix + hex.EncodeToString(b) + "=1", grace: grace, tmp: tmp, exe: exe, log: log}
}

// started starts the watchdog once and returns it (nil if it could not
// start). Without one the agent still works; commands may then outlive a
// killed agent.
func (g *guard) started() *watchdog.Client {
	g.once.Do(func() {
		args := []string{"dsh-acp", watchdogMode, "-grace", g.grace.String(), "-marker", g.marker}
		if self, err := agentdir.Self(); err == nil {
			args = append(args, "-agent", self.String(), "-tmpdir", g.tmp)
		}
		c, err := watchdog.Start(watchdog.Options{
			Path:   g.exe,
			Args:   args,
			Logger: g.log.Named("watchdog"),
		})
		if err != nil {
			g.log.Warn("no watchdog: commands may outlive the agent if it is killed", zap.Error(err))
			return
		}
		g.log.Debug("watchdog started", zap.Int("pid", c.Pid()))
		g.client = c
	})
	return g.client
}

// Started registers session sid with the watchdog (executor.Watcher).
func (g *guard) Started(sid int) {
	if c := g.started(); c != nil {
		c.Started(sid)
	}
}

// Ended tells the watchdog session sid's group is gone (executor.Watcher).
func (g *guard) Ended(sid int) {
	if c := g.started(); c != nil {
		c.Ended(sid)
	}
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
	// Nothing registers after this; a watchdog never started stays so.
	g.once.Do(func() {})
	if g.client == nil {
		return nil
	}
	// The executor ended everything already; the watchdog only checks.
	return g.client.Close(g.grace + 2*time.Second)
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
