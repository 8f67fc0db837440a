package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// config is everything the flags and environment decide.
type config struct {
	baseURL      string
	model        string
	apiKey       string
	script       string
	scriptRecord string
	allow        stringList
	deny         stringList
	keepEnv      stringList
	maxRequests  int
	timeout      time.Duration
	maxTimeout   time.Duration
	logFile      string
	logLevel     string
	version      bool

	// exec only
	cwd      string
	yes      bool
	thoughts bool
	prompt   string
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

func newFlagSet(name string, cfg *config, getenv env, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.baseURL, "base-url", getenv.first("DSH_BASE_URL"), "OpenAI-compatible endpoint (env DSH_BASE_URL; default "+openai.DefaultBaseURL+")")
	fs.StringVar(&cfg.model, "model", getenv.first("DSH_MODEL"), "model name (env DSH_MODEL; default "+openai.DefaultModel+")")
	fs.StringVar(&cfg.script, "script", "", "replay canned model turns from `FILE` instead of calling a model (offline runs, tests)")
	fs.StringVar(&cfg.scriptRecord, "script-record", "", "append every request the model is sent to `FILE`, one JSON line each")
	fs.Var(&cfg.allow, "allow", "run commands matching this prefix `PATTERN` without asking (repeatable)")
	fs.Var(&cfg.deny, "deny", "never run commands matching this prefix `PATTERN` (repeatable; wins over --allow)")
	fs.Var(&cfg.keepEnv, "keep-env", "pass this credential-looking environment `NAME` to commands anyway (repeatable)")
	fs.IntVar(&cfg.maxRequests, "max-requests", agent.DefaultMaxRequests, "model requests allowed per prompt before it stops with max_turn_requests")
	fs.DurationVar(&cfg.timeout, "timeout", 120*time.Second, "default timeout of a foreground command")
	fs.DurationVar(&cfg.maxTimeout, "max-timeout", 600*time.Second, "largest timeout a command may ask for")
	fs.StringVar(&cfg.logFile, "log-file", "", "write logs to `PATH` instead of stderr")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
	return fs
}

func parseServe(args []string, getenv env, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := newFlagSet("dsh-acp", cfg, getenv, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  dsh-acp [flags]                 serve the Agent Client Protocol on stdin/stdout\n  dsh-acp exec [flags] PROMPT...  run one prompt and print what happens\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nEnvironment: DSH_API_KEY (or DEEPSEEK_API_KEY), DSH_BASE_URL, DSH_MODEL.\n")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (did you mean: dsh-acp exec %s?)", fs.Arg(0), strings.Join(fs.Args(), " "))
	}
	cfg.apiKey = getenv.first("DSH_API_KEY", "DEEPSEEK_API_KEY")
	return cfg, cfg.validate()
}

func parseExec(args []string, getenv env, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := newFlagSet("dsh-acp exec", cfg, getenv, stderr)
	fs.StringVar(&cfg.cwd, "cwd", "", "working directory of the session (default: the current directory)")
	fs.BoolVar(&cfg.yes, "yes", false, "answer every permission question with allow (default: refuse)")
	fs.BoolVar(&cfg.thoughts, "thoughts", false, "print the model's reasoning (dimmed)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  dsh-acp exec [flags] PROMPT...\n\nRuns one prompt through the agent and prints the stream.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Default logging of the headless runner is quiet: the terminal is for the
	// person reading the stream, and failures are printed for them anyway.
	cfg.logLevel = "error"
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg.prompt = strings.Join(fs.Args(), " ")
	if strings.TrimSpace(cfg.prompt) == "" && !cfg.version {
		return nil, errors.New("exec needs a prompt: dsh-acp exec [flags] PROMPT...")
	}
	// A relative --cwd means what it means in a shell: relative to here.
	cwd, err := filepath.Abs(cfg.cwd)
	if err != nil {
		return nil, fmt.Errorf("--cwd: %w", err)
	}
	cfg.cwd = cwd
	cfg.apiKey = getenv.first("DSH_API_KEY", "DEEPSEEK_API_KEY")
	return cfg, cfg.validate()
}

func (c *config) validate() error {
	if c.maxRequests <= 0 {
		return fmt.Errorf("--max-requests must be positive, got %d", c.maxRequests)
	}
	if c.timeout <= 0 || c.maxTimeout <= 0 {
		return errors.New("--timeout and --max-timeout must be positive")
	}
	if c.timeout > c.maxTimeout {
		return fmt.Errorf("--timeout %v is above --max-timeout %v", c.timeout, c.maxTimeout)
	}
	switch c.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
	}
	return nil
}
