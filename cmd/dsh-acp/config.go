package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// config is everything the flags and environment decide.
type config struct {
	// explain adds to an error naming a flag the config file line that
	// set it (nil: no file was read).
	explain func(error) error
	baseURL string
	model   string
	// apiKey is the environment's key (DSH_API_KEY, DEEPSEEK_API_KEY); a
	// stored one is looked up per endpoint when needed (lookupKey).
	apiKey       string
	script       string
	scriptRecord string
	allow        stringList
	deny         stringList
	keepEnv      stringList
	maxRequests  int
	// contextWindow is --context-window in tokens; zero means the table of
	// known models (agent.ContextWindow).
	contextWindow int
	// compactAt is --compact-at, a share of the window.
	compactAt float64
	// thinking is --thinking: off, high or max; empty means DeepSeek's
	// default and no thinking option for other models.
	thinking string
	// price is --price as given; parsed into prices.
	price  string
	prices *agent.Price
	// images is --images: on, off, or "" (the models known to read them).
	images       string
	modelTimeout time.Duration
	timeout      time.Duration
	maxTimeout   time.Duration
	logFile      string
	logLevel     string
	version      bool
	// spillDir is $TMPDIR, the parent of the executor's spill directory;
	// empty means os.TempDir().
	spillDir  string
	stateDir  string
	noPersist bool
	// serveArgs are the server's command-line flags, as given: an editor's
	// terminal sign-in runs the binary with them and "login", so it signs
	// in to the endpoint this process uses.
	serveArgs []string
	// getenv is the environment the config was parsed from (the default
	// state directory is looked up from it when a store is opened).
	getenv env

	// sandbox is --sandbox: "on", "off", or "" (on where the probe finds
	// it). defaultMode is --default-mode.
	sandbox        string
	defaultMode    string
	sandboxRead    stringList
	sandboxNetwork bool
	// diffs is --diffs: "on" (the default) or "off".
	diffs string
	// tools is --tools: "all" (the default) or "bash".
	tools string

	// docker is --executor and the --docker-* flags.
	docker dockerConfig

	mcpStartTimeout  time.Duration
	mcpTimeout       time.Duration
	allowMCPReadOnly bool

	// exec only
	// headless: the output is for a person (exec), so logs go to stderr
	// only when asked for with --log-level.
	headless bool
	cwd      string
	yes      bool
	thoughts bool
	prompt   string
	// resume is the stored session exec continues; empty = a new one.
	resume string
	// cont is --continue: resume the newest stored session of the cwd.
	cont bool
	// mcpConfig is --mcp-config, a JSON file of MCP servers.
	mcpConfig string
	// cwdSet: --cwd was given (a resumed session otherwise keeps its own).
	cwdSet bool
	// jsonOut is --json: stdout is one JSON event a line.
	jsonOut bool
}

// env is the program's view of its environment (injected for tests).
type env func(string) string

func (e env) first(names ...string) string {
	for _, n := range names {
		if v := e(n); v != "" {
			return v
		}
	}
	return ""
}

// newFlagSet declares the flags serve and exec share. The flag set prints
// nothing itself: help goes to stdout and errors to stderr, through settle.
func newFlagSet(name string, cfg *config, getenv env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&cfg.baseURL, "base-url", getenv.first("DSH_BASE_URL"), "OpenAI-compatible endpoint (env DSH_BASE_URL; default "+openai.DefaultBaseURL+")")
	fs.StringVar(&cfg.model, "model", getenv.first("DSH_MODEL"), "model name (env DSH_MODEL; default "+openai.DefaultModel+")")
	fs.StringVar(&cfg.script, "script", "", "replay canned model turns from `FILE` instead of calling a model (offline runs, tests)")
	fs.StringVar(&cfg.scriptRecord, "script-record", "", "append every request the model is sent to `FILE`, one JSON line each")
	fs.Var(&cfg.allow, "allow", "run commands matching this prefix `PATTERN` without asking (repeatable)")
	fs.Var(&cfg.deny, "deny", "never run commands matching this prefix `PATTERN` (repeatable; wins over --allow)")
	fs.Var(&cfg.keepEnv, "keep-env", "pass this credential-looking environment `NAME` to commands anyway (repeatable)")
	fs.DurationVar(&cfg.modelTimeout, "model-timeout", openai.DefaultIdleTimeout, "fail a model request, naming the endpoint, after this long without a byte from it")
	fs.IntVar(&cfg.maxRequests, "max-requests", agent.DefaultMaxRequests, "model requests allowed per prompt before it stops with max_turn_requests")
	fs.IntVar(&cfg.contextWindow, "context-window", 0, "the model's context window in `TOKENS` (default: known models' own, else 128000)")
	fs.StringVar(&cfg.thinking, "thinking", getenv.first("DSH_THINKING"), "`off|high|max`: how much new sessions' model thinks (env DSH_THINKING; default high for DeepSeek models; for another model, says it takes reasoning_effort and offers the option)")
	fs.StringVar(&cfg.price, "price", "", "price the model's tokens when the endpoint sends no cost: `in=USD,cached=USD,out=USD` per million tokens (default: DeepSeek's own prices for its models)")
	fs.StringVar(&cfg.images, "images", "", "`on|off`: send the prompt's images to the model (default: only to models known to read them, deepseek-flash and deepseek-v4-flash)")
	fs.Float64Var(&cfg.compactAt, "compact-at", agent.DefaultCompactAt, "compact the conversation before a request that would fill this `SHARE` of the context window (0 < SHARE <= 1)")
	def := executor.DefaultLimits()
	fs.DurationVar(&cfg.timeout, "timeout", def.DefaultTimeout, "default timeout of a foreground command")
	fs.DurationVar(&cfg.maxTimeout, "max-timeout", def.MaxTimeout, "largest timeout a command may ask for")
	fs.DurationVar(&cfg.mcpStartTimeout, "mcp-start-timeout", mcptool.DefaultStartTimeout, "time an MCP server of the editor's has to start and list its tools")
	fs.DurationVar(&cfg.mcpTimeout, "mcp-timeout", mcptool.DefaultCallTimeout, "time one MCP tool call may take")
	fs.BoolVar(&cfg.allowMCPReadOnly, "allow-mcp-readonly", false, "in Ask mode, run MCP tools their server annotates read-only without asking (--deny still applies)")
	fs.StringVar(&cfg.logFile, "log-file", "", "write logs to `PATH` instead of stderr")
	fs.StringVar(&cfg.logLevel, "log-level", "", "log `LEVEL`: debug, info, warn or error (default warn on stderr, info with --log-file)")
	fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
	fs.StringVar(&cfg.stateDir, "state-dir", getenv.first("DSH_STATE_DIR"), "keep sessions under `DIR` (env DSH_STATE_DIR; default $XDG_STATE_HOME/dsh-acp, else ~/.local/state/dsh-acp, ~/Library/Application Support/dsh-acp on macOS)")
	fs.StringVar(&cfg.sandbox, "sandbox", "", "`on|off`: offer the Auto in sandbox mode; on refuses to start where commands cannot be confined (default: on where they can)")
	fs.StringVar(&cfg.defaultMode, "default-mode", "ask", "the `MODE` a new session starts in: ask, sandbox (Auto in sandbox; refuses to start without a sandbox) or auto (Full access)")
	fs.Var(&cfg.sandboxRead, "sandbox-read", "in the sandbox, let commands read only this `PATH` (repeatable; plus the session's directories and the system's; default: everything but the agent's files)")
	fs.BoolVar(&cfg.sandboxNetwork, "sandbox-network", false, "let sandboxed commands use the network (default: denied)")
	fs.StringVar(&cfg.tools, "tools", "all", "`all|bash`: the tools the model is offered: all (bash, its task tools, read, write, edit, glob, grep and update_plan) or bash (the file tools left out)")
	fs.StringVar(&cfg.diffs, "diffs", "on", "`on|off`: show the editor (and exec's output) what each command changed (diffs of the files under the session's directory)")
	fs.StringVar(&cfg.docker.executor, "executor", getenv.first("DSH_EXECUTOR"), "`local|docker`: where commands run (env DSH_EXECUTOR; default local); docker: each session in a container of its own, from --docker-image")
	fs.StringVar(&cfg.docker.image, "docker-image", getenv.first("DSH_DOCKER_IMAGE"), "the `IMAGE` of the sessions' containers with --executor docker; it needs bash (env DSH_DOCKER_IMAGE)")
	fs.StringVar(&cfg.docker.network, "docker-network", "", "the `NETWORK` of the sessions' containers: none, or one of the engine's (default: the engine's default)")
	fs.Var(&cfg.docker.read, "docker-read", "mount this host `PATH` read-only at the same path in every session's container (repeatable)")
	fs.StringVar(&cfg.docker.helper, "docker-helper", getenv.first("DSH_DOCKER_HELPER"), "a static Linux build of dsh-acp to put into containers as their helper, at `PATH` (env DSH_DOCKER_HELPER; default: this binary if it is one)")
	fs.BoolVar(&cfg.noPersist, "no-persist", false, "keep sessions in memory only: nothing is stored, listed after a restart, loaded or resumed")
	return fs
}

// topUsage is the program's help: the commands of commandTable, then the
// server's flags.
func topUsage() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range commandTable() {
		fmt.Fprintf(tw, "  dsh-acp %s %s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	b.WriteString("\nWith no command, dsh-acp serves (flags below). \"dsh-acp help COMMAND\" prints a\ncommand's own help. Every flag can also be set in config.toml (dsh-acp help config).\n\nFlags:\n")
	return b.String()
}

const execUsage = `Usage:
  dsh-acp exec [flags] PROMPT...
  dsh-acp exec [flags] -            (or a prompt piped to stdin)

Runs one prompt through the agent and prints the stream. Flags may come
before or after the prompt; everything after "--" is prompt text.
--continue goes on with the newest stored session of this directory,
--resume ID with any (dsh-acp sessions lists them).

A command that needs approval is asked on the terminal, one key: [y] yes
(or Enter), [a] always in this session, [p] always in this project, [n]
no. Without a terminal it is refused unless --yes (every command,
unconfined), --allow PATTERN (matching commands) or --default-mode
sandbox (every command, confined) says otherwise; an MCP tool with
--allow mcp:SERVER/TOOL or --allow-mcp-readonly.

Exit codes: 0 the turn ended normally, 1 it failed (a model or agent
error), 2 usage error, 3 it stopped early (max_turn_requests, the model's
length limit or a refusal), 4 every command the model asked to run was
refused, 130 interrupted.

Flags:
`

// usageText is a flag set's help: the header, then every flag.
func usageText(header string, fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(header)
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	// The README and every example spell flags with two dashes.
	b.WriteString(strings.ReplaceAll("\n"+flags.String(), "\n  -", "\n  --")[1:])
	b.WriteString("\nEnvironment: DSH_API_KEY (or DEEPSEEK_API_KEY; else the key dsh-acp login stored), DSH_BASE_URL, DSH_MODEL, DSH_THINKING, DSH_STATE_DIR, DSH_EXECUTOR, DSH_DOCKER_IMAGE, DSH_DOCKER_HELPER, NO_COLOR.\n")
	b.WriteString("Every flag can be set in config.toml in the config directory (dsh-acp config says where).\n")
	return b.String()
}

// usageOnly is a command's help listing only the flags names of fs.
func usageOnly(header string, fs *flag.FlagSet, names ...string) string {
	only := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			only.Var(f.Value, f.Name, f.Usage)
		}
	}
	text := usageText(header, only)
	// Not the environment line of the whole program.
	if i := strings.Index(text, "\nEnvironment:"); i >= 0 {
		text = text[:i+1]
	}
	return text
}

// helpError carries the help text a person asked for with -h/--help.
type helpError struct{ text string }

func (e *helpError) Error() string        { return "help requested" }
func (e *helpError) Is(target error) bool { return target == flag.ErrHelp }

// parseFlags parses args with flags allowed anywhere: a flag after the
// prompt is a flag, never prompt text. "--" ends the flags.
func parseFlags(fs *flag.FlagSet, header string, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpError{text: usageText(header, fs)}
			}
			return nil, flagSentence(fs, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagSetFunc declares one command's flags over cfg, their defaults read
// from getenv.
type flagSetFunc func(cfg *config, getenv env) *flag.FlagSet

func serveFlags(cfg *config, getenv env) *flag.FlagSet { return newFlagSet("dsh-acp", cfg, getenv) }

func execFlags(cfg *config, getenv env) *flag.FlagSet {
	fs := newFlagSet("dsh-acp exec", cfg, getenv)
	fs.StringVar(&cfg.cwd, "cwd", "", "working directory of the session (default: the current directory)")
	fs.BoolVar(&cfg.yes, "yes", false, "answer every permission question with allow (default: ask on a terminal, else refuse)")
	fs.BoolVar(&cfg.thoughts, "thoughts", false, "print the model's reasoning (dimmed)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print one JSON object a line for each event instead of text (see the README's \"exec --json\")")
	fs.StringVar(&cfg.resume, "resume", "", "continue the stored session `ID` (see dsh-acp sessions) instead of starting one")
	fs.BoolVar(&cfg.cont, "continue", false, "continue the newest stored session of this working directory")
	fs.StringVar(&cfg.mcpConfig, "mcp-config", "", "start the MCP servers of `FILE` ({\"mcpServers\": {name: {command, args, env} | {url, headers}}})")
	return fs
}

func noEnvAt(string) string { return "" }

// layered is a command's flag set after the defaults, the config file and
// the environment, before the command line: flag > environment > file >
// default.
type layered struct {
	fs   *flag.FlagSet
	file *configFile
	// fileLines: the flags the file set, and on which line.
	fileLines map[string]int
	// fromEnv: the flags whose default the environment gave.
	fromEnv map[string]bool
	// given: the flags the command line gave; one of them replaced the
	// file's single value, so the file is not blamed for it.
	given map[string]bool
}

// parse reads the command line into the layered flags and notes which
// flags it gave (seen on a flag set of their own: the layered one counts
// the file's settings as set too).
func (l *layered) parse(mk flagSetFunc, header string, args []string) ([]string, error) {
	rest, err := parseFlags(l.fs, header, args)
	if err != nil {
		return nil, err
	}
	l.given = map[string]bool{}
	cl := mk(&config{}, noEnvAt)
	if _, err := parseFlags(cl, header, args); err == nil {
		cl.Visit(func(f *flag.Flag) { l.given[f.Name] = true })
	}
	return rest, nil
}

// replaced reports whether the command line gave a single-valued flag,
// which replaced the file's value (a repeatable one adds to it).
func (l *layered) replaced(name string) bool {
	f := l.fs.Lookup(name)
	return l.given[name] && f != nil && !repeatable(f)
}

// layer builds mk's flag set over cfg and applies config.toml to it.
func layer(mk flagSetFunc, cfg *config, getenv env) (*layered, error) {
	l := &layered{fs: mk(cfg, getenv), fromEnv: map[string]bool{}}
	// Generic over the flags: a flag whose default differs from the one
	// it has in an empty environment was set by the environment.
	bare := mk(&config{}, noEnvAt)
	l.fs.VisitAll(func(f *flag.Flag) {
		if b := bare.Lookup(f.Name); b != nil && b.DefValue != f.DefValue {
			l.fromEnv[f.Name] = true
		}
	})
	cf, err := loadConfigFile(configPath(getenv))
	if err != nil {
		return nil, err
	}
	l.file = cf
	// Every key is a flag of exec (a superset of the server's).
	all := execFlags(&config{}, noEnvAt)
	known := func(k string) bool { return all.Lookup(k) != nil }
	if l.fileLines, err = cf.apply(l.fs, known, l.fromEnv); err != nil {
		return nil, err
	}
	return l, nil
}

// explain adds to a validation error the config file line, or the
// environment variable, that set the flag it names, so the person knows
// where to fix it.
func (l *layered) explain(err error) error {
	if err == nil {
		return nil
	}
	for name, line := range l.fileLines {
		if l.replaced(name) {
			continue
		}
		if namesFlag(err.Error(), name) {
			return fmt.Errorf("%w (set in %s:%d)", err, l.file.path, line)
		}
	}
	for name := range l.fromEnv {
		if !l.given[name] && namesFlag(err.Error(), name) {
			return fmt.Errorf("%w (set in the environment: %s)", err, envName(name))
		}
	}
	return err
}

// envName is the variable that gives a flag its default: DSH_ and the
// flag's name (every such flag is named so: --base-url, DSH_BASE_URL).
func envName(flagName string) string {
	return "DSH_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// namesFlag reports whether msg names --name itself, not a longer flag
// that starts with it (--model in "--model-timeout ...").
func namesFlag(msg, name string) bool {
	for rest := msg; ; {
		i := strings.Index(rest, "--"+name)
		if i < 0 {
			return false
		}
		rest = rest[i+2+len(name):]
		if rest == "" || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz-", rune(rest[0])) {
			return true
		}
	}
}

func parseServe(args []string, getenv env) (*config, error) {
	cfg := &config{getenv: getenv}
	l, err := layer(serveFlags, cfg, getenv)
	if err != nil {
		return nil, err
	}
	rest, err := l.parse(serveFlags, topUsage(), args)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: the server takes flags only (see dsh-acp help)", rest[0])
	}
	cfg.apiKey, _ = envKey(getenv)
	cfg.spillDir = getenv("TMPDIR")
	cfg.explain = l.explain
	cfg.serveArgs = append([]string{}, args...)
	return cfg, l.explain(cfg.validate())
}

func parseExec(args []string, getenv env) (*config, error) {
	cfg := &config{getenv: getenv}
	l, err := layer(execFlags, cfg, getenv)
	if err != nil {
		return nil, err
	}
	cfg.headless = true
	rest, err := l.parse(execFlags, execUsage, args)
	if err != nil {
		return nil, err
	}
	cfg.explain = l.explain
	cfg.prompt = strings.Join(rest, " ")
	cfg.cwdSet = cfg.cwd != ""
	// A relative --cwd means what it means in a shell: relative to here.
	cwd, err := filepath.Abs(cfg.cwd)
	if err != nil {
		return nil, fmt.Errorf("--cwd: %w", err)
	}
	cfg.cwd = cwd
	cfg.apiKey, _ = envKey(getenv)
	cfg.spillDir = getenv("TMPDIR")
	switch {
	case cfg.cont && cfg.noPersist:
		return nil, errors.New("--continue needs the store: drop --no-persist")
	case cfg.cont && cfg.resume != "":
		return nil, errors.New("--resume and --continue cannot both be given: --continue picks the newest session of the directory")
	}
	return cfg, l.explain(cfg.validate())
}

// where is err with the config file line that set the flag it names, for
// a value refused only when it is used (a log file that cannot be opened).
func (c *config) where(err error) error {
	if c.explain == nil {
		return err
	}
	return c.explain(err)
}

// window is the model's context window in tokens: --context-window, else
// the table of known models.
func (c *config) window() int {
	if c.contextWindow > 0 {
		return c.contextWindow
	}
	model := c.model
	if model == "" {
		model = openai.DefaultModel
	}
	return agent.ContextWindow(model)
}

// limits is the one limits value the executor and the tools get.
func (c *config) limits() executor.Limits {
	l := executor.DefaultLimits()
	l.DefaultTimeout, l.MaxTimeout = c.timeout, c.maxTimeout
	return l
}

// onOff checks a flag that is on or off (empty: its default).
func onOff(name, v string) error {
	switch v {
	case "", "on", "off":
		return nil
	}
	return fmt.Errorf("--%s must be on or off, got %q", name, v)
}

func (c *config) validate() error {
	for _, check := range []func() error{c.validateTurns, c.validateModel, c.validateRuns, c.validateSandbox, c.validateRules, c.validateLog} {
		if err := check(); err != nil {
			return err
		}
	}
	return c.docker.validate(c.executorKind())
}

// validateTurns checks the flags about a turn's length: --max-requests,
// --context-window, --compact-at.
func (c *config) validateTurns() error {
	if c.maxRequests <= 0 {
		return fmt.Errorf("--max-requests must be positive, got %d", c.maxRequests)
	}
	if c.contextWindow < 0 {
		return fmt.Errorf("--context-window must be positive, got %d", c.contextWindow)
	}
	if !(c.compactAt > 0 && c.compactAt <= 1) { // NaN fails both
		return fmt.Errorf("--compact-at must be above 0 and at most 1, got %v", c.compactAt)
	}
	return nil
}

// validateRuns checks the command and MCP timeouts, and --resume.
func (c *config) validateRuns() error {
	if c.timeout <= 0 || c.maxTimeout <= 0 {
		return errors.New("--timeout and --max-timeout must be positive")
	}
	if c.timeout > c.maxTimeout {
		return fmt.Errorf("--timeout %v is above --max-timeout %v", c.timeout, c.maxTimeout)
	}
	if c.resume != "" && c.noPersist {
		return errors.New("--resume needs the store: drop --no-persist")
	}
	if c.mcpStartTimeout <= 0 || c.mcpTimeout <= 0 {
		return errors.New("--mcp-start-timeout and --mcp-timeout must be positive")
	}
	return nil
}

// validateSandbox checks --sandbox, --diffs, --default-mode and
// --sandbox-read.
func (c *config) validateSandbox() error {
	if err := errors.Join(onOff("sandbox", c.sandbox), onOff("diffs", c.diffs)); err != nil {
		return err
	}
	if c.tools != "all" && c.tools != "bash" {
		return fmt.Errorf("--tools must be all or bash, got %q", c.tools)
	}
	switch c.defaultMode {
	case "ask", "auto":
	case "sandbox":
		if c.sandbox == "off" {
			return errors.New("--default-mode sandbox needs the sandbox: drop --sandbox off")
		}
	default:
		return fmt.Errorf("--default-mode must be ask, sandbox or auto, got %q", c.defaultMode)
	}
	for _, p := range c.sandboxRead {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--sandbox-read needs an absolute path, got %q", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--sandbox-read %s: there is nothing there to let commands read (%v); give a path that exists", p, errors.Unwrap(err))
		}
	}
	return nil
}

// validateRules refuses an empty --allow or --deny: as a prefix it would
// match every command (an empty --allow would run them all unasked).
func (c *config) validateRules() error {
	for _, r := range []struct {
		name string
		list stringList
	}{{"allow", c.allow}, {"deny", c.deny}} {
		for _, p := range r.list {
			if strings.TrimSpace(p) == "" {
				return fmt.Errorf("--%s %q: an empty pattern would match every command; give a command prefix, e.g. --%s 'git status'", r.name, p, r.name)
			}
		}
	}
	return nil
}

func (c *config) validateLog() error {
	switch c.logLevel {
	case "", "debug", "info", "warn", "error":
		return nil
	default:
		return fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
	}
}

// validateModel checks the flags about the model: --model-timeout,
// --thinking, --images, --price (which it parses).
func (c *config) validateModel() error {
	if err := checkBaseURL(c.baseURL); err != nil {
		return err
	}
	if c.modelTimeout <= 0 {
		return fmt.Errorf("--model-timeout must be positive, got %v", c.modelTimeout)
	}
	switch c.thinking {
	case "", agent.ThinkingOff, agent.ThinkingHigh, agent.ThinkingMax:
	default:
		return fmt.Errorf("--thinking must be off, high or max, got %q", c.thinking)
	}
	switch c.images {
	case "", "on", "off":
	default:
		return fmt.Errorf("--images must be on or off, got %q", c.images)
	}
	if c.price != "" {
		p, err := agent.ParsePrice(c.price)
		if err != nil {
			return fmt.Errorf("--price: %w", err)
		}
		c.prices = &p
	}
	return nil
}

// checkBaseURL refuses a --base-url that is no http(s) URL with a host,
// in words a person can act on (not url.Parse's "first path segment in
// URL cannot contain colon" for 127.0.0.1:8080).
func checkBaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	if _, err := openai.Endpoint(raw); err == nil {
		return nil
	}
	hint := ""
	if !strings.Contains(raw, "://") {
		scheme := "https://"
		if h := strings.SplitN(raw, "/", 2)[0]; strings.HasPrefix(h, "localhost") || strings.HasPrefix(h, "127.") || strings.HasPrefix(h, "[::1]") {
			scheme = "http://"
		}
		hint = "; did you mean " + scheme + raw + "?"
	}
	return fmt.Errorf("--base-url %q is not a URL the agent can call: it needs http:// or https:// and a host, e.g. %s%s", raw, openai.DefaultBaseURL, hint)
}

// storeDir is where sessions are kept: --state-dir, else the default.
func (c *config) storeDir() (string, error) {
	if c.stateDir != "" {
		return filepath.Abs(c.stateDir)
	}
	getenv := c.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	d, err := store.DefaultDirFor(runtime.GOOS, getenv)
	if err != nil {
		return "", fmt.Errorf("%w (pass --state-dir, or --no-persist)", err)
	}
	return d, nil
}
