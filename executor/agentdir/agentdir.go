// Package agentdir names the agent's temporary directories (its spill
// directory, its sandbox's temporary directories) after the agent process
// — its pid and its start time — so that those of an agent that is gone
// can be told from a live one's: an editor ends its agent with SIGKILL, and
// the agent cannot remove them then. Its watchdog removes them when it dies
// (Remove with the agent's identity), and each agent at its start removes
// those of agents that are gone (RemoveGone).
package agentdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// Kinds are the directories named this way: "dsh-acp-<kind>-<pid>-<start>-<random>".
var Kinds = []string{"spill", "sandbox"}

// Agent identifies one agent process: a pid alone may have been reused by
// another process since.
type Agent struct {
	Pid int
	// Start is the process's start time, in the platform's unit (Linux:
	// clock ticks since boot; macOS: microseconds since the epoch).
	Start uint64
}

// Self is the calling process.
var Self = sync.OnceValues(func() (Agent, error) {
	pid := os.Getpid()
	start, err := proctab.StartTime(pid)
	if err != nil {
		return Agent{}, fmt.Errorf("own start time: %w", err)
	}
	return Agent{Pid: pid, Start: start}, nil
})

// String is the form the names and the watchdog's flag carry: "pid-start".
func (a Agent) String() string {
	return strconv.Itoa(a.Pid) + "-" + strconv.FormatUint(a.Start, 10)
}

// Parse reads what String wrote.
func Parse(s string) (Agent, error) {
	p, st, ok := strings.Cut(s, "-")
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(st, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid <= 0 {
		return Agent{}, fmt.Errorf("agent %q: want pid-start", s)
	}
	return Agent{Pid: pid, Start: start}, nil
}

// Pattern is the os.MkdirTemp pattern of a directory of this kind of a's.
func (a Agent) Pattern(kind string) string {
	return "dsh-acp-" + kind + "-" + a.String() + "-*"
}

// Pattern is the os.MkdirTemp pattern of the calling agent's directory of
// this kind. Where the process's start time cannot be read the name does
// not carry the agent, and no sweep ever removes it.
func Pattern(kind string) string {
	self, err := Self()
	if err != nil {
		return "dsh-acp-" + kind + "-*"
	}
	return self.Pattern(kind)
}

// Alive reports whether a still runs. When in doubt (its start time cannot
// be read though the pid exists) it says yes: a live agent's directories
// are never removed.
func (a Agent) Alive() bool {
	if err := unix.Kill(a.Pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	start, err := proctab.StartTime(a.Pid)
	if err != nil {
		return !errors.Is(unix.Kill(a.Pid, 0), unix.ESRCH)
	}
	return start == a.Start
}

// owner returns the agent a directory name belongs to.
func owner(name string) (Agent, bool) {
	for _, k := range Kinds {
		rest, ok := strings.CutPrefix(name, "dsh-acp-"+k+"-")
		if !ok {
			continue
		}
		// pid-start-random; a name without the agent (an older agent's,
		// or one kept on purpose) has a single number.
		i := strings.LastIndexByte(rest, '-')
		if i < 0 {
			return Agent{}, false
		}
		if _, err := strconv.ParseUint(rest[i+1:], 10, 64); err != nil {
			return Agent{}, false
		}
		a, err := Parse(rest[:i])
		return a, err == nil
	}
	return Agent{}, false
}

// Remove removes, in parent, the directories of the agents for which
// which returns true, and returns the paths it removed. Only real
// directories owned by the calling user are touched: never a link, never
// another user's directory that happens to be named alike. A directory
// that cannot be removed is skipped (the next sweep tries again).
func Remove(parent string, which func(Agent) bool) ([]string, error) {
	d, err := os.Open(parent)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", parent, err)
	}
	// Names only: $TMPDIR may hold many entries, and start-up waits.
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", parent, err)
	}
	uid := os.Getuid()
	var removed []string
	var errs []error
	for _, name := range names {
		a, ok := owner(name)
		if !ok || !which(a) {
			continue
		}
		path := filepath.Join(parent, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		if err := removeAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// RemoveGone removes, in parent, the directories of agents that are gone.
func RemoveGone(parent string) ([]string, error) {
	self, _ := Self()
	return Remove(parent, func(a Agent) bool { return a != self && !a.Alive() })
}

// removeAll removes dir and everything in it, also what a command left
// without write permission.
func removeAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
