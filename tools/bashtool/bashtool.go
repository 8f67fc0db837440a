// Package bashtool implements the model-facing tools bash, bash_output and
// bash_kill as pure schema and text shaping over the executor seam: argument
// validation, the calling session's workdir, task ownership and the exact
// result text of tool-text.md. It never touches a process.
//
// Decisions the text contract leaves open:
//   - Arguments that are not a JSON object read
//     "invalid arguments: expected a JSON object"; empty arguments count as {}
//     so the model hears which property is missing. A null property counts as
//     absent.
//   - A non-string description reads "invalid description: expected a
//     non-empty string": tool-text.md has no type message for it.
//   - A background command that cannot start is an error result at once
//     ("Error: <spawn error>"), so no completion notice follows it. Its task
//     still exists: bash_output on it repeats the spawn error as an error
//     result (none of the four status lines is true of a process that never
//     ran), and bash_kill reports it as already finished, as the executor
//     does.
package bashtool

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Tool names, in registration order.
const (
	NameBash   = "bash"
	NameOutput = "bash_output"
	NameKill   = "bash_kill"
)

// Fallbacks for the timeouts named in the bash description when neither
// Options nor the executor can tell (the local executor's defaults).
const (
	fallbackDefaultTimeout = 120 * time.Second
	fallbackMaxTimeout     = 600 * time.Second
)

// Options configures the tool set.
type Options struct {
	// Executor runs every command. Required.
	Executor executor.Executor
	// Notify, if set, receives a completion notice for each owned background
	// task that ends: the owner's session id and the notice text. It runs on
	// an executor goroutine and must not block; nil means no notices.
	Notify func(sessionID, text string)
	// Logger receives debug and warning logs; nil means none.
	Logger *zap.Logger
	// DefaultTimeout and MaxTimeout only feed the bash description; the
	// executor enforces the real limits. Zero means ask the executor
	// (Resolve an unset and an over-large timeout) and, if it cannot tell,
	// 120s and 600s.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
}

// Set is the three tools over one executor, plus the subscription that turns
// task ends into completion notices.
type Set struct {
	exec  executor.Executor
	log   *zap.Logger
	tools []tools.Tool

	unsubscribe func()

	// mu guards closed and notify; a notice holds it for reading while it
	// calls notify so Close can promise no notice after it returns.
	mu     sync.RWMutex
	closed bool
	notify func(sessionID, text string)
}

// New builds the tool set and subscribes to task ends when opts.Notify is
// set. Call Close to unsubscribe.
func New(opts Options) (*Set, error) {
	if opts.Executor == nil {
		return nil, errors.New("bashtool: nil executor")
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("bashtool")
	def, maxT := probeTimeouts(opts, log)
	s := &Set{exec: opts.Executor, log: log, notify: opts.Notify}
	s.tools = []tools.Tool{
		&bashTool{exec: s.exec, log: log, description: bashDescription(def, maxT), schema: bashSchema(def, maxT)},
		&outputTool{exec: s.exec, schema: taskSchema("to read")},
		&killTool{exec: s.exec, schema: taskSchema("to stop")},
	}
	if opts.Notify != nil {
		s.unsubscribe = s.exec.Subscribe(s.taskEnded)
	}
	return s, nil
}

// Tools returns bash, bash_output and bash_kill, in that order.
func (s *Set) Tools() []tools.Tool {
	return append([]tools.Tool(nil), s.tools...)
}

// Close unsubscribes from task ends; no notice is delivered after it
// returns. It does not close the executor, which the set does not own.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.unsubscribe != nil {
		s.unsubscribe()
	}
	return nil
}

// taskEnded turns an owned task's end into a notice for its session. An
// unowned task has nobody to tell, and a Failed one was already reported as
// an error result when it was started.
func (s *Set) taskEnded(end executor.TaskEnd) {
	if end.Owner == "" || end.Status.State == executor.Failed {
		return
	}
	text := fmt.Sprintf("background bash task %s finished %s. Read its output with bash_output.", end.ID, statusLine(end.Status))
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || s.notify == nil {
		return
	}
	s.notify(end.Owner, text)
}

// probeTimeouts finds the default and maximum timeout to name in the bash
// description, preferring explicit options, then what the executor's Resolve
// reports, then the local executor's defaults.
func probeTimeouts(opts Options, log *zap.Logger) (def, maxT time.Duration) {
	def, maxT = opts.DefaultTimeout, opts.MaxTimeout
	if def <= 0 {
		def = fallbackDefaultTimeout
		if spec, err := opts.Executor.Resolve(executor.Spec{}); err != nil {
			log.Warn("resolve default timeout", zap.Error(err))
		} else if spec.Timeout > 0 {
			def = spec.Timeout
		}
	}
	if maxT <= 0 {
		maxT = fallbackMaxTimeout
		// An over-large timeout comes back clamped to the maximum; one that
		// comes back unchanged means the executor did not say.
		const huge = time.Duration(math.MaxInt64)
		if spec, err := opts.Executor.Resolve(executor.Spec{Timeout: huge}); err != nil {
			log.Warn("resolve maximum timeout", zap.Error(err))
		} else if spec.Timeout > 0 && spec.Timeout < huge {
			maxT = spec.Timeout
		}
	}
	if maxT < def {
		maxT = def
	}
	return def, maxT
}
