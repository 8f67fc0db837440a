package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/agentdir"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// Options configure a Local executor. The zero value is usable.
type Options struct {
	// Limits bound every command; zero fields mean DefaultLimits'.
	Limits
	// DefaultWorkdir is used when a Spec has no workdir, and relative
	// workdirs are resolved against it. Empty means the process's cwd at
	// resolve time.
	DefaultWorkdir string
	// SpillDir is the parent of the executor's private spill directory
	// (mode 0700, created on first need with os.MkdirTemp). Empty means
	// os.TempDir().
	SpillDir string
	// KeepSpillFiles keeps every spill file: neither KillOwned nor Close
	// removes them, for a caller whose output names them to someone who
	// reads them after it exits (the headless runner). By default
	// KillOwned removes an owner's files and Close the whole directory,
	// since nothing can refer to them after their session or the process
	// ends.
	KeepSpillFiles bool
	// Env is the base environment of every command before scrubbing. Nil
	// means os.Environ() at NewLocal.
	Env []string
	// KeepEnv names variables to keep although they look like a
	// credential (see LooksSecret and LooksSecretValue). The variables of
	// Limits.CredentialEnv are removed regardless.
	KeepEnv []string
	// Secrets are values (the model API key) no command may see: any
	// variable whose value equals one, or contains one of 8 bytes or more,
	// is removed.
	Secrets []string
	// Shell is the bash binary. Empty means "bash" looked up in PATH when a
	// command starts.
	Shell string
	// NextTaskID, if set, numbers background tasks ("bash-" + number)
	// instead of the executor's own counter from 1, so ids are never reused
	// across restarts of the agent. It is given the task's owner and called
	// once per Start, outside the executor's lock; an error fails the Start.
	NextTaskID func(owner string) (int64, error)
	// TaskStarted, if set, is told each background task's id and owner
	// once the task is recorded and before its command starts (a record
	// of it precedes any process of it), from the goroutine of its Start;
	// not for a Start that fails before (a closed executor, a counter that
	// fails).
	TaskStarted func(id, owner string)
	// Watcher, if set, is told of every command's session as it starts and
	// when its process group is gone, so that a process outliving the
	// agent (the watchdog) can end them whatever ends the agent. Nil means
	// nobody is told. Hardening the agent process itself (non-dumpable,
	// the credential hand-over) is the program's job, not the executor's.
	Watcher Watcher
	// Confine, if set, confines the commands whose Spec.Sandboxed is set
	// (every command with ConfineAll). Nil means no command can be
	// confined: a sandboxed spec fails to start with ErrNoSandbox.
	Confine Confiner
	// ConfineAll confines every command, whatever its Spec.Sandboxed says:
	// a sandboxed executor behind the same seam (tests run the tool and
	// transcript suites against it). It needs Confine.
	ConfineAll bool
	// RunMarker, if set, is an environment entry ("NAME=VALUE") added to
	// every command's and service's environment, by which a process
	// outliving the agent (the watchdog) finds what left their sessions.
	RunMarker string
	// Logger receives diagnostics. Nil means zap.NewNop().
	Logger *zap.Logger
}

// Watcher is told about the sessions of commands. Calls come from the
// goroutine that starts or reaps a command and must not block.
type Watcher interface {
	// Started: a command was started in session sid (its shell's pid, which
	// is also its process group id).
	Started(sid int)
	// Ended: the process group of session sid is gone. Members that left
	// the group may still live on in the session.
	Ended(sid int)
}

// Local runs commands as local processes. Create it with NewLocal.
type Local struct {
	opts     Options
	env      []string
	withheld []string
	logger   *zap.Logger

	// wg counts everything that must end before Close returns: foreground
	// runs, task supervisors and group reapers. Add only under mu while
	// !closed, or from a goroutine already counted.
	wg sync.WaitGroup

	// mu guards the fields below.
	mu       sync.Mutex
	closed   bool
	procs    map[*proc]struct{}    // every process group not yet known gone
	services map[*Service]struct{} // services not yet over, for KillOwned
	markTag  string                // names the services' and tasks' markers (ownMarker)
	nextMark int
	tasks    map[string]*task
	nextTask int
	subs     map[int]func(TaskEnd)
	nextSub  int
	shell    string              // resolved Shell, cached after the first lookup
	spillDir string              // created on first need
	ownDirs  map[string]string   // owner → its subdirectory of spillDir
	spills   map[string][]string // owner → its spill files, for KillOwned

	closeOnce sync.Once
	closeErr  error
}

// NewLocal checks opts, fills defaults and snapshots the environment.
func NewLocal(opts Options) (*Local, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	opts.Limits = opts.Limits.WithDefaults()
	switch {
	case opts.DefaultTimeout < 0, opts.MaxTimeout < 0, opts.KillGrace < 0, opts.LeftoverGrace < 0:
		return nil, errors.New("new executor: negative duration")
	case opts.TailBytes < 0, opts.UnreadBytes < 0:
		return nil, errors.New("new executor: negative size")
	case opts.ConfineAll && opts.Confine == nil:
		return nil, errors.New("new executor: ConfineAll without a Confiner")
	case opts.DefaultTimeout > opts.MaxTimeout:
		return nil, fmt.Errorf("new executor: default timeout %v exceeds max %v", opts.DefaultTimeout, opts.MaxTimeout)
	}
	if opts.DefaultWorkdir != "" {
		abs, err := filepath.Abs(opts.DefaultWorkdir)
		if err != nil {
			return nil, fmt.Errorf("new executor: default workdir: %w", err)
		}
		opts.DefaultWorkdir = abs
	}
	base := opts.Env
	if base == nil {
		base = os.Environ()
	}
	if opts.RunMarker != "" {
		base = append(slices.Clip(base), opts.RunMarker)
	}
	env, withheld := buildEnv(base, opts.KeepEnv, opts.CredentialEnv, opts.Secrets)
	return &Local{
		opts:     opts,
		env:      env,
		withheld: withheld,
		logger:   opts.Logger,
		procs:    make(map[*proc]struct{}),
		services: make(map[*Service]struct{}),
		tasks:    make(map[string]*task),
		subs:     make(map[int]func(TaskEnd)),
		ownDirs:  make(map[string]string),
		spills:   make(map[string][]string),
	}, nil
}

// Withheld names the variables of the base environment that commands do not
// get because they look like credentials (by name, or a URL with a
// password) and KeepEnv does not name them. The model key variables are
// never passed and not listed.
func (l *Local) Withheld() []string { return slices.Clone(l.withheld) }

// resolve fills the spec's unset fields from the executor's config: workdir
// (configured default, else the process's cwd; a relative one is resolved
// against it) and timeout (default, clamped to the maximum). Given values
// are kept.
func (l *Local) resolve(spec Spec) (Spec, error) {
	if spec.Timeout < 0 {
		return spec, fmt.Errorf("resolve: negative timeout %v", spec.Timeout)
	}
	spec.Timeout = l.opts.Limits.Timeout(spec.Timeout)
	if spec.Workdir == "" || !filepath.IsAbs(spec.Workdir) {
		def := l.opts.DefaultWorkdir
		if def == "" {
			wd, err := os.Getwd()
			if err != nil {
				return spec, fmt.Errorf("resolve: workdir: %w", err)
			}
			def = wd
		}
		spec.Workdir = filepath.Join(def, spec.Workdir)
	}
	spec.Workdir = filepath.Clean(spec.Workdir)
	return spec, nil
}

// Run runs spec in the foreground and waits for it. A non-zero exit, a
// signal death or a timeout is a Result, not an error. Errors are
// infrastructure failures: the command could not start (missing workdir,
// no bash), or ctx was cancelled (the error wraps ErrAborted; the process
// group was killed and the partial Result is returned).
func (l *Local) Run(ctx context.Context, spec Spec) (Result, error) {
	spec, err := l.resolve(spec)
	if err != nil {
		return Result{}, err
	}
	res := Result{Timeout: spec.Timeout, Workdir: spec.Workdir}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx))
	}
	if err := l.begin(); err != nil {
		return res, err
	}
	defer l.wg.Done()
	p, err := l.spawn(ctx, spec, "run", 0, "")
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx))
		}
		return res, err
	}

	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	var timedOut, aborted bool
	p.waitLeader(ctx.Done(), timer.C, func(byTimer bool) {
		if byTimer {
			timedOut = true
		} else {
			aborted = true
		}
		p.terminate(false)
	})
	// Sampled before collect: a Close that only finds leftovers of a shell
	// that already exited did not abort the command.
	closed := p.closing()
	p.collect()

	res.Stdout = p.stdout.output()
	res.Stderr = p.stderr.output()
	res.ExitCode, res.Signal = p.exit()
	res.TimedOut = timedOut
	res.Duration = time.Since(p.started)
	l.reapLater(p)

	if aborted {
		return res, fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx))
	}
	if closed {
		return res, fmt.Errorf("%w: %w", ErrAborted, ErrClosed)
	}
	return res, nil
}

// Subscribe registers fn to be told, exactly once per task, when a
// background task ends. fn runs on an executor goroutine and must not block
// for long. It is never called after Close returns. A call already under
// way when unsubscribe returns may still complete.
func (l *Local) Subscribe(fn func(TaskEnd)) (unsubscribe func()) {
	l.mu.Lock()
	id := l.nextSub
	l.nextSub++
	l.subs[id] = fn
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
	}
}

func (l *Local) notify(end TaskEnd) {
	l.mu.Lock()
	fns := make([]func(TaskEnd), 0, len(l.subs))
	for _, fn := range l.subs {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(end)
	}
}

// Close kills every process group still running (services included) and
// waits until all of them are gone; nothing new starts after it. It is
// safe to call more than once; later calls wait the same.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		procs := make([]*proc, 0, len(l.procs))
		for p := range l.procs {
			procs = append(procs, p)
		}
		tasks := make([]*task, 0, len(l.tasks))
		for _, t := range l.tasks {
			tasks = append(tasks, t)
		}
		l.mu.Unlock()

		sids := make(map[int]bool, len(procs))
		var markers []string
		for _, p := range procs {
			p.terminate(true)
			if pid := p.hostPid(); pid > 0 {
				sids[pid] = true
			}
			if p.marker != "" {
				markers = append(markers, p.marker)
			}
		}
		// A finished task's daemon carries its marker still.
		for _, t := range tasks {
			if p := t.proc(); p != nil && p.marker != "" && p.hostPid() > 0 {
				markers = append(markers, p.marker)
			}
		}
		// What left the groups but not the sessions (and what left a
		// service's session) is ended here, for all commands at once: one
		// walk of the process table per round, and one grace in all,
		// however many commands there are.
		l.endSessions(sids, markers)
		// Every counted goroutine ends only once its group is gone (see
		// reap), so this is the "all process groups are gone" point.
		l.wg.Wait()

		l.mu.Lock()
		dir := l.spillDir
		l.mu.Unlock()
		if dir != "" && !l.opts.KeepSpillFiles {
			if err := os.RemoveAll(dir); err != nil {
				l.closeErr = fmt.Errorf("close: remove spill dir: %w", err)
			}
		}
		if c := l.opts.Confine; c != nil {
			if err := c.Close(); err != nil {
				l.closeErr = errors.Join(l.closeErr, fmt.Errorf("close: sandbox: %w", err))
			}
		}
	})
	return l.closeErr
}

// endSessions sends SIGTERM to every process group with a live member in
// one of sids (their leaders' groups had theirs) and to every process
// carrying one of markers, SIGKILL to what is left after the grace, and
// returns when none of them can run any more.
func (l *Local) endSessions(sids map[int]bool, markers []string) {
	if len(sids) == 0 && len(markers) == 0 {
		return
	}
	err := proctab.End(proctab.Ending{Sessions: sids, Markers: markers, Termed: sids, Grace: l.opts.KillGrace})
	if err != nil {
		l.logger.Warn("end sessions", zap.Error(err)) // the per-command reapers still end the groups
	}
}

// spillDirs returns the executor's private spill directory and owner's
// subdirectory of it, creating them on first need (mode 0700). Each owner
// (session) has its own, so that a confined command can be let read its
// session's spill files and none of another's.
func (l *Local) spillDirs(owner string) (root, own string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spillDir == "" {
		parent := l.opts.SpillDir
		if parent == "" {
			parent = os.TempDir()
		}
		// Named after the agent, so that its watchdog and the next agent
		// can remove it if the agent dies (SIGKILL) before it could. Kept
		// spill files are for a person to open later: no sweep takes them.
		pattern := agentdir.Pattern("spill")
		if l.opts.KeepSpillFiles {
			pattern = "dsh-acp-spill-"
		}
		d, err := os.MkdirTemp(parent, pattern)
		if err != nil {
			return "", "", fmt.Errorf("spill dir: %w", err)
		}
		l.spillDir = d
	}
	if own = l.ownDirs[owner]; own == "" {
		d, err := os.MkdirTemp(l.spillDir, "s-")
		if err != nil {
			return "", "", fmt.Errorf("spill dir: %w", err)
		}
		l.ownDirs[owner], own = d, d
	}
	return l.spillDir, own, nil
}

// OwnerSpillDir returns owner's private spill directory, creating it on first
// need (mode 0700). Other spill files of the owner's (its MCP servers') may
// go there: a confined command of owner can read them and one of another
// owner cannot, and KillOwned removes them with the directory (unless
// KeepSpillFiles).
func (l *Local) OwnerSpillDir(owner string) (string, error) {
	_, own, err := l.spillDirs(owner)
	return own, err
}

// spillFile creates a spill file in the owner's private directory, creating
// it on first need, and records it under its owner so KillOwned can remove
// it. A failure is retried on the next overflow.
func (l *Local) spillFile(owner, label string) (*os.File, error) {
	_, dir, err := l.spillDirs(owner)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, label+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("spill file: %w", err)
	}
	if owner != "" {
		l.mu.Lock()
		l.spills[owner] = append(l.spills[owner], f.Name())
		l.mu.Unlock()
	}
	return f, nil
}
