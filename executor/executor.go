// Package executor is the one place where the agent's processes run:
// commands, background tasks and a session's services (stdio MCP servers).
// It is the seam: the tool layer shapes text over the small interface it
// declares (bashtool.Executor), which *Local fills, and never touches a
// process; the pluggable starts (Confiner: sandboxed, in a container) sit
// behind Local, so the model sees the same bytes wherever commands run.
package executor

import (
	"errors"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrUnknownTask: no task has that id.
	ErrUnknownTask = errors.New("unknown task")
	// ErrClosed: the executor was closed; nothing new starts.
	ErrClosed = errors.New("executor closed")
	// ErrAborted wraps the context's error when a foreground run was
	// cancelled by its caller (the turn was cancelled) rather than timed out.
	ErrAborted = errors.New("command aborted")
)

// Stream names one of a command's two output streams.
type Stream int

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Spec describes one command. Zero values mean "not given"; resolve fills
// them from the executor's configuration.
type Spec struct {
	// Command is run as `bash -c Command`.
	Command string
	// Workdir is the directory the command runs in. The tool layer sets it
	// from the calling session; empty means the executor's
	// configured default (else the process's cwd).
	Workdir string
	// Root is the tree a confined command may write: the calling session's
	// cwd, whatever Workdir the model named (a workdir elsewhere is where
	// the command starts, not where it may write). Empty means Workdir.
	Root string
	// Roots are more trees a confined command may write, beside Root:
	// the session's other project roots (a container mounts them at their
	// own paths).
	Roots []string
	// Timeout bounds a foreground run. Zero means the configured default;
	// values above the configured maximum are clamped to it. Background
	// tasks have no timeout.
	Timeout time.Duration
	// Owner is the session id that owns a background task; empty means no
	// owner (open to any caller). Recorded on the task for its whole life.
	Owner string
	// Observe, if set, receives a foreground command's output as it arrives,
	// for live display: p is one read of stream s, and spill is the file
	// that holds every byte of s once s overflowed (Output.SpillPath: empty
	// before that, and when the file could not be written), so a display
	// that skips bytes can say where they are. It is called from the
	// executor's reader goroutines, possibly for both streams at once; it
	// must return quickly, must not block and must not keep p after
	// returning.
	Observe func(s Stream, p []byte, spill string)
	// Registered, if set, is called with a background task's id once the
	// task is recorded and before its command starts: the caller knows
	// the id before the task can end (its end reaches the subscribers on
	// a goroutine of its own, which may run before Start returned).
	Registered func(id string)
	// Sandboxed runs the command confined by the executor's Confiner
	// (Options.Confine); without one the command fails to start
	// (ErrNoSandbox). False runs it unconfined, unless the executor
	// confines everything (Options.ConfineAll).
	Sandboxed bool
}

// Output is what is kept of one stream.
type Output struct {
	// Text is the whole stream, or its tail (cut on a UTF-8 boundary) when
	// Truncated.
	Text string
	// Truncated reports that the stream exceeded the in-memory limit and
	// only the tail is in Text.
	Truncated bool
	// SpillPath is the file that holds every byte of the stream. It is set
	// once the stream overflowed and the file could be written; empty
	// otherwise (an overflowed stream with empty SpillPath means the spill
	// file is unavailable).
	SpillPath string
	// Bytes is the total number of bytes the stream produced.
	Bytes int64
}

// Result is the outcome of a foreground run.
type Result struct {
	Stdout Output
	Stderr Output
	// ExitCode is the exit status; -1 when the process died by a signal.
	ExitCode int
	// Signal is the name of the signal that ended the process ("SIGKILL"),
	// empty if it exited normally.
	Signal string
	// TimedOut reports that the executor's timer fired, however the process
	// then ended (a command that traps SIGTERM and exits 0 is still timed out).
	TimedOut bool
	// Timeout is the effective timeout the run had.
	Timeout time.Duration
	// Workdir is the directory the command ran in.
	Workdir string
	// Duration is wall time from start to the end of output collection.
	Duration time.Duration
}

// State is a background task's lifecycle state.
type State int

const (
	// Running: the process has not ended yet.
	Running State = iota
	// Completed: the process exited on its own with an exit code.
	Completed
	// Killed: the process ended by a signal (ours or another's).
	Killed
	// Failed: the process could not be started.
	Failed
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Completed:
		return "completed"
	case Killed:
		return "killed"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Status describes where a background task is.
type Status struct {
	State State
	// ExitCode is meaningful when State is Completed.
	ExitCode int
	// Signal names the signal that ended a Killed task; may be empty when
	// no signal is known.
	Signal string
	// Err says why a Failed task could not start.
	Err error
}

// TaskInfo describes a background task without consuming its output.
type TaskInfo struct {
	ID      string
	Owner   string
	Command string
	Workdir string
	Status  Status
	// Started is when the task was started.
	Started time.Time
}

// Chunk is the part of one stream produced since the previous read.
type Chunk struct {
	// Text is the unread output still held in memory.
	Text string
	// Dropped counts unread bytes that no longer fit in memory and were
	// dropped before Text; they are still in SpillPath.
	Dropped int64
	// SpillPath holds every byte of the stream once it overflowed; empty when
	// the stream never overflowed or the file could not be written.
	SpillPath string
}

// Read is the output a background task produced since the previous read.
type Read struct {
	Stdout Chunk
	Stderr Chunk
	Status Status
}

// KillResult says what a kill did.
type KillResult struct {
	// AlreadyFinished: the task had ended before the kill; nothing was sent.
	AlreadyFinished bool
	// Status is the task's status when Kill returned (Running while the
	// SIGTERM→SIGKILL escalation is still under way).
	Status Status
}

// TaskEnd is delivered once per background task when it ends.
type TaskEnd struct {
	ID     string
	Owner  string
	Status Status
	// Shutdown: the executor's Close ended the task (the agent is
	// stopping), not the task itself, a kill or its session's close.
	Shutdown bool
}
