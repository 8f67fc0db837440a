package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/agent/scripted"
	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/instructions"
	"github.com/dsh-acp/dsh-acp/internal/logbridge"
	"github.com/dsh-acp/dsh-acp/internal/sandboxsetup"
	"github.com/dsh-acp/dsh-acp/internal/signin"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
	"github.com/dsh-acp/dsh-acp/internal/userdir"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/permission/project"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/asktool"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
	"github.com/dsh-acp/dsh-acp/tools/filetool"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
	"github.com/dsh-acp/dsh-acp/turn"
	"github.com/dsh-acp/dsh-acp/undo"
)

// app is the wired program: one executor shared by every session.
type app struct {
	log      *zap.Logger
	exec     *executor.Local
	toolset  *bashtool.Set
	sessions *sessions.Registry
	agent    *acp.Agent
	// store is nil with --no-persist; guard without a watchdog; tracker
	// with --diffs off.
	store   *store.Store
	guard   *guard
	tracker *changes.Tracker
	// cleanup closes what newApp made, the last made first: on its error,
	// or at close.
	cleanup cleanup

	closeOnce sync.Once
	closeErr  error
	// ending starts the executor's Close once; execDone then gives its
	// result.
	ending   sync.Once
	execDone chan error
}

// newLogger writes structured logs to stderr or --log-file: stdout belongs
// to the protocol. The headless runner prints for a person: it logs
// nothing unless asked.
func newLogger(cfg *config, stderr io.Writer) (*zap.Logger, func() error, error) {
	return logbridge.Open(cfg.logLevel, cfg.logFile, cfg.headless, stderr)
}

// newProvider is the model provider: the script's, or the endpoint's; op
// is the endpoint's (nil for a script), whose key a sign-in may set.
func newProvider(cfg *config, log *zap.Logger) (p agent.Provider, op *openai.Provider, closers []func() error, err error) {
	if cfg.script != "" {
		sp, err := scripted.Load(cfg.script)
		if err != nil {
			// Not fatal: the editor still gets an agent, and every prompt
			// says what is wrong with the script.
			log.Error("script not usable", zap.Error(err))
			loadErr := fmt.Errorf("%w: load script (--script): %w", agent.ErrProvider, err)
			p = agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
				return agent.Response{}, loadErr
			})
		} else {
			p = sp
			log.Info("using scripted model", zap.String("script", cfg.script))
		}
	} else {
		op, err = openai.New(openai.Options{
			BaseURL: cfg.baseURL, Model: cfg.model, Key: signin.Lookup(cfg.getenv, cfg.baseURL),
			IdleTimeout: cfg.modelTimeout, Logger: log.Named("model"),
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("model endpoint: %w", err)
		}
		if err := op.Check(); err != nil {
			// Not fatal: the editor still starts and every prompt says
			// what to set.
			log.Warn("model not usable yet", zap.Error(err))
		}
		log.Info("using model endpoint", zap.String("endpoint", op.Endpoint()), zap.String("model", op.Model()))
		p = op
	}
	if cfg.scriptRecord != "" {
		f, err := untrusted.Open(cfg.scriptRecord, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open --script-record file: %w", err)
		}
		closers = append(closers, f.Close)
		p = scripted.NewRecorder(p, f)
	}
	return p, op, closers, nil
}

// signIn is the editor's sign-in to the model endpoint; nil for a
// scripted run, which needs no key. The key is looked up at every request
// (signin.Lookup), so Ready only says whether one is there now.
func signIn(cfg *config, op *openai.Provider) *acp.SignIn {
	if op == nil {
		return nil
	}
	return &acp.SignIn{
		Ready: func(context.Context) error { return op.Check() },
		Logout: func(context.Context) (string, error) {
			return signin.Logout(cfg.getenv, cfg.baseURL)
		},
		Command: signin.SelfPath(),
		Args:    cfg.serveArgs,
		Env:     signin.TerminalEnv(cfg.getenv),
	}
}

// storedKeyAtStart is the key stored for the endpoint now ("" with none).
func storedKeyAtStart(cfg *config) string {
	k, _ := signin.Lookup(cfg.getenv, cfg.baseURL)()
	return k
}

// agentFiles are the agent's own files, which no command may read: the
// log, the script record, the config directory (the stored key and
// config.toml) and, when sessions are stored, the state directory. The
// whole config directory, not the key alone: a confined command that could
// write config.toml (cwd $HOME) would set what the next agent obeys — its
// --base-url (where the key is sent), --allow rules, its default mode.
func agentFiles(cfg *config, stored bool) []string {
	files := []string{cfg.logFile, cfg.scriptRecord}
	if dir, err := userdir.ConfigDirFor(runtime.GOOS, cfg.getenv); err == nil {
		files = append(files, dir)
	}
	if stored {
		if dir, err := cfg.storeDir(); err == nil {
			files = append(files, dir)
		}
	}
	return files
}

// chooseConfiner is where commands run: the sandbox's confiner (confining
// every command only under the test switch), or with --executor docker
// every command in its session's container, where the Auto in sandbox mode
// is not offered, the container being what confines. g (nil: none) is told
// of the processes the container client starts (an ssh:// engine's).
func chooseConfiner(cfg *config, limits executor.Limits, log *zap.Logger, sb *sandbox.Lazy, g *guard) (confine executor.Confiner, all bool, offered func() bool, err error) {
	if cfg.executorKind() != "docker" {
		return sb, testSwitchSandbox(cfg), sb.Offered, nil
	}
	dc, err := startDocker(cfg, limits, log, g)
	if err != nil {
		return nil, false, nil, fmt.Errorf("--executor docker: %w", err)
	}
	return dc, true, func() bool { return false }, nil
}

func newApp(cfg *config, log *zap.Logger) (_ *app, err error) {
	a := &app{log: log}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.cleanup.run())
		}
	}()
	provider, op, closers, err := newProvider(cfg, log)
	if err != nil {
		return nil, err
	}
	a.cleanup.push(closers...)
	// One limits value for the executor and the tools: the bash description
	// names the timeouts the executor enforces.
	limits := cfg.limits()
	tmp := cfg.tempParent()
	// Beside serving, not before it: the editor's initialize answer need
	// not wait for a listing of $TMPDIR (hundreds of names on a shared
	// machine: the largest part of our own start-up). Only gone agents'
	// directories go, which nothing of this agent touches; close waits.
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		removeLeftovers(tmp, log)
	}()
	a.cleanup.push(func() error { <-swept; return nil })
	if cfg.process {
		a.guard = newGuard(log, limits.KillGrace, tmp)
		a.cleanup.push(a.guard.close)
	}
	if a.store, err = openStore(cfg, log); err != nil {
		return nil, err
	}
	confine, confineAll, offered, err := a.confiner(cfg, limits)
	if err != nil {
		return nil, err
	}
	a.newSessions(cfg, offered)
	if err := a.startExecutor(cfg, limits, confine, confineAll); err != nil {
		return nil, err
	}
	a.toolset, err = bashtool.New(bashtool.Options{
		Executor: a.exec,
		Limits:   limits,
		Notify:   a.sessions.Notify,
		Logger:   log,
		Changes:  a.tracker,
	})
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	a.cleanup.push(a.toolset.Close)
	modelTools, err := a.modelTools(cfg)
	if err != nil {
		return nil, err
	}
	undoer, err := undo.New(undo.Options{Executor: a.exec, Changes: a.tracker, Notify: a.sessions.Notify})
	if err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	turns, err := turn.New(turn.Options{
		Sessions: a.sessions,
		// The editor sees a background task's changes with the notice
		// that reports its end, unless a bash_output call read it first.
		Noticed: a.toolset,
		Loop: &agent.Loop{
			Provider:      provider,
			Tools:         modelTools,
			FileTools:     cfg.tools != "bash",
			MaxRequests:   cfg.maxRequests,
			OS:            runtime.GOOS,
			ContextWindow: cfg.window(),
			CompactAt:     cfg.compactAt,
			Model:         modelName(cfg),
			Price:         cfg.prices,
			// A scripted run asks no endpoint and costs nothing.
			NoBuiltinPrices: cfg.script != "",
			Tasks:           a.toolset,
			Undo:            undoer,
			Logger:          log.Named("agent"),
		},
		// The user's own AGENTS.md, read before every project's.
		UserInstructions: userInstructions(cfg.getenv, log),
		Rules:            permission.Rules{Allow: cfg.allow, Deny: cfg.deny},
		Project:          projectRules(a.store),
		MCP: turn.MCPOptions{
			Servers: mcptool.Options{
				StartTimeout: cfg.mcpStartTimeout,
				CallTimeout:  cfg.mcpTimeout,
			},
			// Stdio servers are services of their session in the executor.
			Launcher: mcpLaunchers(a.exec),
			// Each session's servers spill into their own private
			// directory (0700, dsh-acp-mcp-*, made on first need) inside
			// the executor's directory of that session: a confined command
			// of the session can read them as it reads its own command
			// spill files, one of another session cannot (the executor's
			// whole spill directory is denied to it). Removed when the
			// session closes.
			SpillParent:   a.exec.OwnerSpillDir,
			AllowReadOnly: cfg.allowMCPReadOnly,
		},
		Model:    modelName(cfg),
		Thinking: cfg.thinking,
		Images:   cfg.images,
		Logger:   log.Named("turn"),
	})
	if err != nil {
		return nil, err
	}
	a.agent, err = acp.New(acp.Options{
		Sessions:   a.sessions,
		Turns:      turns,
		OnShutdown: a.endCommands,
		Version:    version(),
		Models:     newModelLister(cfg, op),
		SignIn:     signIn(cfg, op),
		Logger:     log.Named("acp"),
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// modelTools are the tools the model is offered: the bash tools, the file
// tools unless --tools bash, then the plan the editor shows, then (unless
// --tools bash, and only to an editor that shows forms) ask_user.
func (a *app) modelTools(cfg *config) ([]tools.Tool, error) {
	out := a.toolset.Tools()
	if cfg.tools == "bash" {
		return append(out, tools.UpdatePlan()), nil
	}
	ft, err := filetool.Tools(filetool.Options{Executor: a.exec, Changes: a.tracker, Home: cfg.getenv.first("HOME"), XDGConfigHome: cfg.getenv.first("XDG_CONFIG_HOME")})
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	out = append(out, ft...)
	return append(out, tools.UpdatePlan(), asktool.Tool()), nil
}

// confiner is where commands run (see chooseConfiner); startExecutor
// hands it to the executor, which closes it.
func (a *app) confiner(cfg *config, limits executor.Limits) (confine executor.Confiner, all bool, offered func() bool, err error) {
	sb, err := startSandbox(cfg, a.log, agentFiles(cfg, a.store != nil))
	if err != nil {
		return nil, false, nil, err
	}
	confine, all, offered, err = chooseConfiner(cfg, limits, a.log, sb, a.guard)
	if err != nil {
		return nil, false, nil, err
	}
	return confine, all, offered, nil
}

// newSessions makes the session registry (and with --diffs the tracker of
// what commands change, which it forgets a session's part of at its close).
func (a *app) newSessions(cfg *config, offered func() bool) {
	if cfg.diffs != "off" {
		a.tracker = changes.New(changes.Options{Home: cfg.getenv.first("HOME"), XDGConfigHome: cfg.getenv.first("XDG_CONFIG_HOME"),
			NoEvents: cfg.remoteEngine(), Logger: a.log.Named("changes")})
		// Its inotify descriptors go last, once no command measures.
		a.cleanup.push(func() error { a.tracker.Close(); return nil })
	}
	a.sessions = sessions.New(sessions.Options{
		OnClose:     a.sessionClosed,
		Store:       a.store,
		GoneNotice:  bashtool.GoneNotice,
		Sandbox:     offered,
		DefaultMode: sessions.Mode(cfg.defaultMode),
		Logger:      a.log.Named("sessions"),
	})
}

// startExecutor makes the executor over confine, which it then owns (its
// Close closes confine); if it cannot, confine is closed here.
func (a *app) startExecutor(cfg *config, limits executor.Limits, confine executor.Confiner, confineAll bool) error {
	opts := executor.Options{
		Limits:   limits,
		SpillDir: cfg.spillDir,
		// The headless runner's output names the spill files (the notes
		// after a truncated command, a skipped live stretch) for a person
		// to open after it exits: they stay. A server's go with their
		// session.
		KeepSpillFiles: cfg.headless,
		Env:            os.Environ(),
		RunMarker:      a.guard.runMarker(),
		KeepEnv:        cfg.keepEnv,
		// The key stored for the endpoint too (a file read, no request):
		// a variable that happens to hold it is withheld like the key's
		// own.
		Secrets: slices.DeleteFunc([]string{cfg.apiKey, storedKeyAtStart(cfg)}, func(k string) bool { return k == "" }),
		Watcher: a.guard.watcher(),
		Confine: confine,
		// The test switch is decided before serving (startSandbox).
		ConfineAll: confineAll,
		Logger:     a.log.Named("executor"),
	}
	reg := a.sessions
	if st := a.store; st != nil {
		// Task ids continue the store's sequence, and each task is recorded
		// with its session before it runs, so a later process knows which
		// ids were its.
		opts.NextTaskID = func(string) (int64, error) { return st.NextTaskIDs(1) }
		opts.TaskStarted = func(id, owner string) {
			if owner != "" {
				reg.TaskStarted(owner, id, "")
			}
		}
	}
	ex, err := executor.NewLocal(opts)
	if err != nil {
		return errors.Join(fmt.Errorf("start executor: %w", err), confine.Close())
	}
	if names := append(slices.Clone(cfg.dropped), ex.Withheld()...); len(names) > 0 {
		slices.Sort(names)
		// Warn, so it shows at the default level: a user whose build
		// needs one of these should learn why it is missing.
		a.log.Warn("credential variables withheld from commands; --keep-env NAME passes one", zap.Strings("names", slices.Compact(names)))
	}
	a.exec = ex
	unsubscribe := ex.Subscribe(func(end executor.TaskEnd) {
		// A task the agent's own shutdown ends is not recorded: the next
		// process finds it started and never ended, and tells the model
		// it was stopped by the restart. Recorded or not would otherwise
		// be a race with the sessions' close, and its entry would make
		// the session the newest in session/list for no act of the user.
		if end.Owner != "" && !end.Shutdown {
			reg.TaskEnded(end.Owner, end.ID, end.Status.State.String())
		}
	})
	a.cleanup.push(func() error { unsubscribe(); return nil })
	a.cleanup.push(func() error { a.endCommands(); return <-a.execDone })
	return nil
}

// sessionClosed is the sessions' OnClose. A session closes only once the
// app serves, after newApp set every field it reads.
func (a *app) sessionClosed(id string) {
	if n := a.exec.KillOwned(id); n > 0 {
		a.log.Info("killed background tasks of closed session", zap.String("session", id), zap.Int("tasks", n))
	}
	// What the session's commands changed is nobody's to read any more
	// (a task still ending measures into a tree no longer kept).
	if a.tracker != nil {
		a.tracker.Forget(id)
	}
	a.toolset.Forget(id)
}

// projectRules are the "always in this project" answers, beside the
// sessions in the state directory; none with --no-persist (nothing
// outlives the process then).
func projectRules(st *store.Store) turn.ProjectRules {
	if st == nil {
		return nil
	}
	return project.Open(st.Dir())
}

// close kills every process group the agent started and releases files.
// Safe to call more than once.
func (a *app) close() error {
	a.closeOnce.Do(func() {
		a.endCommands()
		a.sessions.CloseAll()
		a.closeErr = a.cleanup.run()
	})
	return a.closeErr
}

// endCommands starts ending every command of every session at once, with
// one grace in all (the executor's Close), and returns: the sessions close
// meanwhile, each turn ending as its command does. It runs as the agent
// starts to shut down (acp.Options.OnShutdown), before the protocol layer
// waits for the turns: otherwise the background tasks would only be
// signalled once the foreground commands that ignore SIGTERM had had
// their grace, and then had a grace of their own.
func (a *app) endCommands() {
	a.ending.Do(func() {
		a.execDone = make(chan error, 1)
		go func() { a.execDone <- a.exec.Close() }()
	})
}

// cleanup is a stack of closers, pushed as resources are made.
type cleanup []func() error

func (c *cleanup) push(fns ...func() error) { *c = append(*c, fns...) }

// run calls every closer, the last pushed first, and empties the stack.
func (c *cleanup) run() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i]())
	}
	*c = nil
	return errors.Join(errs...)
}

// openStore opens the state directory (nothing is read: start-up costs the
// same with a thousand stored sessions); nil with --no-persist.
func openStore(cfg *config, log *zap.Logger) (*store.Store, error) {
	if cfg.noPersist {
		return nil, nil
	}
	dir, err := cfg.storeDir()
	if err != nil {
		// An editor may start us with a bare environment: serve anyway,
		// in memory only, rather than not at all.
		log.Warn("sessions will not be stored", zap.Error(err))
		return nil, nil
	}
	st, err := store.New(store.Options{Dir: dir, Logger: log.Named("store")})
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return st, nil
}

// userInstructions is the path of the user's own AGENTS.md in the config
// directory of the environment the config was parsed from (nil: an empty
// one, as for the state directory); empty (none is read) when there is no
// such directory.
func userInstructions(getenv env, log *zap.Logger) string {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		log.Info("no user AGENTS.md: no config directory", zap.Error(err))
		return ""
	}
	return filepath.Join(dir, instructions.AgentsFile)
}

// testExecutorEnv is the test switch that confines every command, whatever
// the session's mode: the transcript suite runs against the sandboxed
// executor with DSH_TEST_EXECUTOR=sandbox. It only ever confines more, and
// like --sandbox on it refuses to start where there is no sandbox.
const testExecutorEnv = "DSH_TEST_EXECUTOR"

// testSwitchSandbox reports whether the test switch confines every
// command (DSH_TEST_EXECUTOR=sandbox).
func testSwitchSandbox(cfg *config) bool {
	return cfg.getenv != nil && cfg.getenv(testExecutorEnv) == "sandbox"
}

// startSandbox sets up the sandbox the settings ask for (sandboxsetup);
// deny is what is the agent's and no command may read.
func startSandbox(cfg *config, log *zap.Logger, deny []string) (*sandbox.Lazy, error) {
	configDir, _ := userdir.ConfigDirFor(runtime.GOOS, cfg.getenv)
	return sandboxsetup.Start(sandboxsetup.Options{
		Sandbox: cfg.sandbox, DefaultMode: cfg.defaultMode,
		All: testSwitchSandbox(cfg), Switch: testExecutorEnv + "=sandbox",
		ConfigDir: configDir, TempParent: cfg.spillDir, Read: cfg.sandboxRead, Network: cfg.sandboxNetwork,
		Deny: deny, Logger: log,
	})
}
