package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/executor"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/execclient"
	"github.com/dsh-acp/dsh-acp/internal/signin"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// config is everything the flags and environment decide.
type config struct {
	// settings are the values as read, each with its source (nil: none
	// were read, as in a test's config).
	settings *settings.Parsed
	baseURL  string
	model    string
	// apiKey is the environment's key (DSH_API_KEY, DEEPSEEK_API_KEY); a
	// stored one is looked up per endpoint when needed (signin.Lookup).
	apiKey       string
	script       string
	scriptRecord string
	allow        []string
	deny         []string
	keepEnv      []string
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
	sandboxRead    []string
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

	// process: this is the program itself, not a test in-process: it
	// runs a watchdog (and exec quits on a second Ctrl-C).
	process bool
	// dropped are the credential variables dropped at the start's
	// hand-over (secretenv.Hide).
	dropped []string

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

// usageFooter closes the help of serve, exec, config, sessions and rules.
const usageFooter = "\nEnvironment: DSH_API_KEY (or DEEPSEEK_API_KEY; else the key dsh-acp login stored), DSH_BASE_URL, DSH_MODEL, DSH_THINKING, DSH_STATE_DIR, DSH_EXECUTOR, DSH_DOCKER_IMAGE, DSH_DOCKER_HELPER, NO_COLOR.\n" +
	"Every flag can be set in config.toml in the config directory (dsh-acp config says where).\n"

// readSettings reads the settings of command (name in messages) over a
// new config: config.toml, the environment, then args. positional checks
// the words that are not flags before any value is checked.
func readSettings(r settings.Request, positional func([]string) error) (*config, error) {
	cfg := &config{getenv: r.Getenv}
	r.FilePath = configPath(r.Getenv)
	r.Positional = positional
	p, err := cfg.table().Parse(r)
	if err != nil {
		return nil, err
	}
	cfg.settings = p
	cfg.apiKey, _ = signin.EnvKey(r.Getenv)
	cfg.spillDir = r.Getenv("TMPDIR")
	return cfg, nil
}

func parseServe(args []string, getenv env) (*config, error) {
	cfg, err := readSettings(settings.Request{Name: "dsh-acp", Header: topUsage(), Footer: usageFooter, Args: args, Getenv: getenv}, func(rest []string) error {
		if len(rest) > 0 {
			return fmt.Errorf("unexpected argument %q: the server takes flags only (see dsh-acp help)", rest[0])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cfg.serveArgs = append([]string{}, args...)
	return cfg, nil
}

func parseExec(args []string, getenv env) (*config, error) {
	cfg, err := readSettings(settings.Request{Command: execCommand, Name: "dsh-acp exec", Header: execclient.Usage, Footer: usageFooter, Args: args, Getenv: getenv}, nil)
	if err != nil {
		return nil, err
	}
	cfg.headless = true
	cfg.prompt = strings.Join(cfg.settings.Args, " ")
	cfg.cwdSet = cfg.cwd != ""
	// A relative --cwd means what it means in a shell: relative to here.
	if cfg.cwd, err = filepath.Abs(cfg.cwd); err != nil {
		return nil, fmt.Errorf("--cwd: %w", err)
	}
	return cfg, nil
}

// blame is err as setting name's, naming the config.toml line or the
// variable that set it (a value refused only when used: a log file that
// cannot be opened).
func (c *config) blame(name string, err error) error {
	if c.settings == nil {
		return err
	}
	return c.settings.Blame(name, err)
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
