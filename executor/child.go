package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// ChildSpec is a process of the agent's own, not of a session: one that
// talks over its stdin and stdout, such as the ssh transport to a container
// engine (one per connection). It is started, watched and ended as a
// command is: in a session of its own, told to the Watcher (the watchdog
// ends it with the agent, SIGKILL included), ended by proctab.
type ChildSpec struct {
	// Path is the program; Args its argv, Args[0] included.
	Path string
	Args []string
	// Env is its whole environment; nil means the agent's. RunMarker is
	// added either way.
	Env []string
	// Stderr receives its stderr; nil means /dev/null.
	Stderr *os.File
	// Watcher, if set, is told of its session (see Options.Watcher).
	Watcher Watcher
	// RunMarker is Options.RunMarker: the watchdog finds by it what the
	// child started that left its session.
	RunMarker string
	// InputGrace is how long Close lets it exit on the end of its input
	// before it is ended; zero ends it at once.
	InputGrace time.Duration
	// Grace is the time from its SIGTERM to its SIGKILL. Zero means 2s.
	Grace time.Duration
}

// Child is a started ChildSpec: a connection (Stdin, Stdout) and a wait
// (Exited). Close is the one way it ends.
type Child struct {
	pid     int
	stdin   *os.File
	stdout  *os.File
	exited  chan struct{}
	waitErr error // set before exited is closed
	spec    ChildSpec

	closeOnce sync.Once
}

// StartChild starts spec.
func StartChild(spec ChildSpec) (*Child, error) {
	if spec.Grace <= 0 {
		spec.Grace = 2 * time.Second
	}
	inR, inW, outR, outW, err := stdioPipes()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	if spec.RunMarker != "" {
		env = append(slices.Clip(env), spec.RunMarker)
	}
	process, err := StartCmd(sessionCmd(spec.Path, spec.Args, "", env, inR, outW, spec.Stderr))
	closeAll(inR, outW)
	if err != nil {
		closeAll(inW, outR)
		return nil, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	c := &Child{pid: process.Pid(), stdin: inW, stdout: outR, exited: make(chan struct{}), spec: spec}
	if w := spec.Watcher; w != nil {
		w.Started(c.pid)
	}
	go func() {
		ws, err := process.Wait()
		if err == nil && (ws.Signaled() || ws.ExitStatus() != 0) {
			err = errors.New(exitText(ws))
		}
		c.waitErr = err
		close(c.exited)
	}()
	return c, nil
}

// Pid is the child's pid, also its process group and session.
func (c *Child) Pid() int { return c.pid }

// Stdin is the write end of its stdin; Close closes it.
func (c *Child) Stdin() *os.File { return c.stdin }

// Stdout is the read end of its stdout; Close closes it.
func (c *Child) Stdout() *os.File { return c.stdout }

// Exited is closed once its own process has ended.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Err is how it ended, once Exited is closed: nil for exit status 0.
func (c *Child) Err() error {
	select {
	case <-c.exited:
		return c.waitErr
	default:
		return nil
	}
}

// Close ends the child and returns once nothing of its session is left:
// its stdin is closed (a connection's orderly end), it has the input grace
// to exit, then proctab.End ends its session (SIGTERM, SIGKILL after the
// grace). Later calls return at once.
func (c *Child) Close() error {
	c.closeOnce.Do(func() {
		_ = c.stdin.Close()
		if g := c.spec.InputGrace; g > 0 {
			t := time.NewTimer(g)
			select {
			case <-c.exited:
			case <-t.C:
			}
			t.Stop()
		}
		// Its leftovers too, if it left any in its session.
		if err := proctab.End(proctab.Ending{Sessions: map[int]bool{c.pid: true}, Grace: c.spec.Grace}); err != nil {
			select {
			case <-c.exited: // reaped: its pid names it no more
			default:
				_ = proctab.SignalGroup(c.pid, unix.SIGKILL)
			}
		}
		<-c.exited
		_ = c.stdout.Close()
		if w := c.spec.Watcher; w != nil {
			w.Ended(c.pid)
		}
	})
	return nil
}

// exitText words a wait status as os/exec does.
func exitText(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// stdioPipes are a child's stdin (inR its end) and stdout (outW its end):
// *os.File each, so exec starts no copy goroutine that a grandchild holding
// a pipe could keep Wait waiting on, and our read end takes deadlines.
func stdioPipes() (inR, inW, outR, outW *os.File, err error) {
	inR, inW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err = os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, nil, nil, nil, fmt.Errorf("stdout pipe: %w", err)
	}
	return inR, inW, outR, outW, nil
}

// sessionCmd runs path in a session of its own, as a command: its own
// group (a terminal's ^C to the agent is not its, and it has no controlling
// terminal to read from or stop on), what the watchdog ends.
func sessionCmd(path string, args []string, dir string, env []string, stdin, stdout, stderr *os.File) *exec.Cmd {
	cmd := &exec.Cmd{
		Path: path, Args: args, Dir: dir, Env: env,
		Stdin: stdin, Stdout: stdout,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	return cmd
}
