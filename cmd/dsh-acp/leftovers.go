package main

import (
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/agentdir"
)

// tempParent is where the agent's temporary directories go: $TMPDIR
// (absolute: the watchdog is told it), else the system's.
func (c *config) tempParent() string {
	d := c.spillDir
	if d == "" {
		d = os.TempDir()
	}
	if abs, err := filepath.Abs(d); err == nil {
		d = abs
	}
	return d
}

// removeLeftovers removes, in tmp, the temporary directories of agents
// that are gone: a SIGKILL (how editors end agents) leaves them, with the
// full output of their commands, when the agent's watchdog could not
// remove them either. A live agent's, another user's and an older agent's
// unnamed ones stay (see agentdir). It reads names only, and runs beside
// serving (see newApp).
func removeLeftovers(tmp string, log *zap.Logger) {
	removed, err := agentdir.RemoveGone(tmp)
	if err != nil {
		log.Warn("leftovers of agents that are gone", zap.Error(err))
	}
	if len(removed) > 0 {
		log.Info("removed leftovers of agents that are gone", zap.Strings("dirs", removed))
	}
}
