package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Options configure a Local executor. The zero value is usable.
type Options struct {
	// Limits bound every command; zero fields mean DefaultLimits'.
	Limits
	// DefaultWorkdir is used when a Spec has no workdir, and relative
	// workdirs are resolved against it. Empty means the process's cwd at
	// Resolve time.
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
	// KeepEnv names variables to keep although their name looks like a
	// credential (contains KEY, SECRET, TOKEN or PASSWORD). The variables
	// of Limits.CredentialEnv are removed regardless.
	KeepEnv []string
	// Secrets are values (the model API key) no command may see: any
	// variable whose value equals one, or contains one of 8 bytes or more,
	// is removed.
	Secrets []string
	// Shell is the bash binary. Empty means "bash" looked up in PATH when a
	// command starts.
	Shell string
	// AllowInspection leaves the agent process dumpable. By default NewLocal
	// marks it non-dumpable (prctl PR_SET_DUMPABLE 0) so that a command
	// running as the same user cannot read the API key from
	// /proc/<agent>/environ or /proc/<agent>/mem. Children are unaffected:
	// execve makes them dumpable again.
	AllowInspection bool
	// NextTaskID, if set, numbers background tasks ("bash-" + number)
	// instead of the executor's own counter from 1, so ids are never reused
	// across restarts of the agent. It is given the task's owner and called
	// once per Start, outside the executor's lock; an error fails the Start.
	NextTaskID func(owner string) (int64, error)
	// Logger receives diagnostics. Nil means zap.NewNop().
	Logger *zap.Logger
}

// Local runs commands as local processes. Create it with NewLocal.
type Local struct {
	opts   Options
	env    []string
	logger *zap.Logger

	// wg counts everything that must end before Close returns: foreground
	// runs, task supervisors and group reapers. Add only under mu while
	// !closed, or from a goroutine already counted.
	wg sync.WaitGroup

	// mu guards the fields below.
	mu       sync.Mutex
	closed   bool
	procs    map[*proc]struct{} // every process group not yet known gone
	tasks    map[string]*task
	nextTask int
	subs     map[int]func(TaskEnd)
	nextSub  int
	shell    string              // resolved Shell, cached after the first lookup
	spillDir string              // created on first need
	spills   map[string][]string // owner → its spill files, for KillOwned

	closeOnce sync.Once
	closeErr  error
}

var _ Executor = (*Local)(nil)

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
	if !opts.AllowInspection {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			return nil, fmt.Errorf("new executor: protect environment: %w", err)
		}
	}
	base := opts.Env
	if base == nil {
		base = os.Environ()
	}
	return &Local{
		opts:   opts,
		env:    buildEnv(base, opts.KeepEnv, opts.CredentialEnv, opts.Secrets),
		logger: opts.Logger,
		procs:  make(map[*proc]struct{}),
		tasks:  make(map[string]*task),
		subs:   make(map[int]func(TaskEnd)),
		spills: make(map[string][]string),
	}, nil
}

// Resolve fills the workdir and timeout the caller left unset.
func (l *Local) Resolve(spec Spec) (Spec, error) {
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

// Run runs spec in the foreground. See Executor.Run.
func (l *Local) Run(ctx context.Context, spec Spec) (Result, error) {
	spec, err := l.Resolve(spec)
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
	p, err := l.spawn(spec, "run", 0)
	if err != nil {
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

// Subscribe registers fn for background task ends. A call already under way
// when unsubscribe returns may still complete.
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

// Close kills every process group still running and waits until all of them
// are gone. It is safe to call more than once; later calls wait the same.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		procs := make([]*proc, 0, len(l.procs))
		for p := range l.procs {
			procs = append(procs, p)
		}
		l.mu.Unlock()

		for _, p := range procs {
			p.terminate(true)
		}
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
	})
	return l.closeErr
}

// spillFile creates a spill file in the private directory, creating that
// directory on first need, and records it under its owner so KillOwned can
// remove it. A failure is retried on the next overflow.
func (l *Local) spillFile(owner, label string) (*os.File, error) {
	l.mu.Lock()
	dir := l.spillDir
	if dir == "" {
		parent := l.opts.SpillDir
		if parent == "" {
			parent = os.TempDir()
		}
		d, err := os.MkdirTemp(parent, "dsh-acp-spill-")
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("spill dir: %w", err)
		}
		l.spillDir, dir = d, d
	}
	l.mu.Unlock()
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
