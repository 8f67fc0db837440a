package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/executor"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// exec is the command whose own settings (cwd, yes, …) the table marks.
const execCommand = "exec"

// table is every setting of dsh-acp and dsh-acp exec, read into c: the
// one place a flag, its variable, its config.toml key, its default and its
// check are stated.
func (c *config) table() settings.Table {
	def := executor.DefaultLimits()
	S, B, I, F, D, L := settings.String, settings.Bool, settings.Int, settings.Float, settings.Duration, settings.List
	return settings.Table{
		{Name: "base-url", Env: "DSH_BASE_URL", Kind: S, Var: &c.baseURL, Check: func() error { return checkBaseURL(c.baseURL) },
			Usage: "OpenAI-compatible endpoint (env DSH_BASE_URL; default " + openai.DefaultBaseURL + ")"},
		{Name: "model", Env: "DSH_MODEL", Kind: S, Var: &c.model, Usage: "model name (env DSH_MODEL; default " + openai.DefaultModel + ")"},
		{Name: "script", Kind: S, Var: &c.script, Usage: "replay canned model turns from `FILE` instead of calling a model (offline runs, tests)"},
		{Name: "script-record", Kind: S, Var: &c.scriptRecord, Usage: "append every request the model is sent to `FILE`, one JSON line each"},
		{Name: "allow", Kind: L, Var: &c.allow, Check: func() error { return emptyPattern("allow", c.allow) },
			Usage: "run commands matching this prefix `PATTERN` without asking (repeatable)"},
		{Name: "deny", Kind: L, Var: &c.deny, Check: func() error { return emptyPattern("deny", c.deny) },
			Usage: "never run commands matching this prefix `PATTERN` (repeatable; wins over --allow)"},
		{Name: "keep-env", Kind: L, Var: &c.keepEnv, Usage: "pass this credential-looking environment `NAME` to commands anyway (repeatable)"},
		{Name: "model-timeout", Kind: D, Var: &c.modelTimeout, Default: openai.DefaultIdleTimeout, Check: c.checkModelTimeout,
			Usage: "fail a model request, naming the endpoint, after this long without a byte from it"},
		{Name: "max-requests", Kind: I, Var: &c.maxRequests, Default: agent.DefaultMaxRequests, Check: c.checkMaxRequests,
			Usage: "model requests allowed per prompt before it stops with max_turn_requests"},
		{Name: "context-window", Kind: I, Var: &c.contextWindow, Check: c.checkContextWindow,
			Usage: "the model's context window in `TOKENS` (default: known models' own, else 128000)"},
		{Name: "thinking", Env: "DSH_THINKING", Kind: S, Var: &c.thinking, Check: c.checkThinking,
			Usage: "`off|high|max`: how much new sessions' model thinks (env DSH_THINKING; default high for DeepSeek models; for another model, says it takes reasoning_effort and offers the option)"},
		{Name: "price", Kind: S, Var: &c.price, Check: c.checkPrice,
			Usage: "price the model's tokens when the endpoint sends no cost: `in=USD,cached=USD,out=USD` per million tokens (default: DeepSeek's own prices for its models)"},
		{Name: "images", Kind: S, Var: &c.images, Check: func() error { return oneOf("images", c.images, "", "on", "off") },
			Usage: "`on|off`: send the prompt's images to the model (default: only to models known to read them, deepseek-flash and deepseek-v4-flash)"},
		{Name: "compact-at", Kind: F, Var: &c.compactAt, Default: agent.DefaultCompactAt, Check: c.checkCompactAt,
			Usage: "compact the conversation before a request that would fill this `SHARE` of the context window (0 < SHARE <= 1)"},
		{Name: "timeout", Kind: D, Var: &c.timeout, Default: def.DefaultTimeout, Check: c.checkTimeouts, Usage: "default timeout of a foreground command"},
		{Name: "max-timeout", Kind: D, Var: &c.maxTimeout, Default: def.MaxTimeout, Usage: "largest timeout a command may ask for"},
		{Name: "mcp-start-timeout", Kind: D, Var: &c.mcpStartTimeout, Default: mcptool.DefaultStartTimeout, Check: c.checkMCPTimeouts,
			Usage: "time an MCP server of the editor's has to start and list its tools"},
		{Name: "mcp-timeout", Kind: D, Var: &c.mcpTimeout, Default: mcptool.DefaultCallTimeout, Usage: "time one MCP tool call may take"},
		{Name: "allow-mcp-readonly", Kind: B, Var: &c.allowMCPReadOnly,
			Usage: "in Ask mode, run MCP tools their server annotates read-only without asking (--deny still applies)"},
		{Name: "log-file", Kind: S, Var: &c.logFile, Usage: "write logs to `PATH` instead of stderr"},
		{Name: "log-level", Kind: S, Var: &c.logLevel, Check: c.checkLogLevel,
			Usage: "log `LEVEL`: debug, info, warn or error (default warn on stderr, info with --log-file)"},
		{Name: "version", Kind: B, Var: &c.version, OneRun: true, Usage: "print the version and exit"},
		{Name: "state-dir", Env: "DSH_STATE_DIR", Kind: S, Var: &c.stateDir,
			Usage: "keep sessions under `DIR` (env DSH_STATE_DIR; default $XDG_STATE_HOME/dsh-acp, else ~/.local/state/dsh-acp, ~/Library/Application Support/dsh-acp on macOS)"},
		{Name: "no-persist", Kind: B, Var: &c.noPersist, Usage: "keep sessions in memory only: nothing is stored, listed after a restart, loaded or resumed"},
		{Name: "sandbox", Kind: S, Var: &c.sandbox, Check: func() error { return oneOf("sandbox", c.sandbox, "", "on", "off") },
			Usage: "`on|off`: offer the Auto in sandbox mode; on refuses to start where commands cannot be confined (default: on where they can)"},
		{Name: "default-mode", Kind: S, Var: &c.defaultMode, Default: "ask", Check: c.checkDefaultMode,
			Usage: "the `MODE` a new session starts in: ask, sandbox (Auto in sandbox; refuses to start without a sandbox) or auto (Full access)"},
		{Name: "sandbox-read", Kind: L, Var: &c.sandboxRead, Check: c.checkSandboxRead,
			Usage: "in the sandbox, let commands read only this `PATH` (repeatable; plus the session's directories and the system's; default: everything but the agent's files)"},
		{Name: "sandbox-network", Kind: B, Var: &c.sandboxNetwork, Usage: "let sandboxed commands use the network (default: denied)"},
		{Name: "tools", Kind: S, Var: &c.tools, Default: "all", Check: c.checkTools,
			Usage: "`all|bash`: the tools the model is offered: all (bash, its task tools, read, write, edit, glob, grep and update_plan) or bash (the file tools left out)"},
		{Name: "diffs", Kind: S, Var: &c.diffs, Default: "on", Check: func() error { return oneOf("diffs", c.diffs, "", "on", "off") },
			Usage: "`on|off`: show the editor (and exec's output) what each command changed (diffs of the files under the session's directory)"},
		{Name: "executor", Env: "DSH_EXECUTOR", Kind: S, Var: &c.docker.executor, Check: func() error { return c.docker.validate(c.executorKind()) },
			Usage: "`local|docker`: where commands run (env DSH_EXECUTOR; default local); docker: each session in a container of its own, from --docker-image"},
		{Name: "docker-image", Env: "DSH_DOCKER_IMAGE", Kind: S, Var: &c.docker.image, Usage: "the `IMAGE` of the sessions' containers with --executor docker; it needs bash (env DSH_DOCKER_IMAGE)"},
		{Name: "docker-network", Kind: S, Var: &c.docker.network, Usage: "the `NETWORK` of the sessions' containers: none, or one of the engine's (default: the engine's default)"},
		{Name: "docker-read", Kind: L, Var: &c.docker.read, Usage: "mount this host `PATH` read-only at the same path in every session's container (repeatable)"},
		{Name: "docker-helper", Env: "DSH_DOCKER_HELPER", Kind: S, Var: &c.docker.helper,
			Usage: "a static Linux build of dsh-acp to put into containers as their helper, at `PATH` (env DSH_DOCKER_HELPER; default: this binary if it is one)"},

		// exec's own.
		{Name: "cwd", Command: execCommand, OneRun: true, Kind: S, Var: &c.cwd, Usage: "working directory of the session (default: the current directory)"},
		{Name: "yes", Command: execCommand, Kind: B, Var: &c.yes, Usage: "answer every permission question with allow (default: ask on a terminal, else refuse)"},
		{Name: "thoughts", Command: execCommand, Kind: B, Var: &c.thoughts, Usage: "print the model's reasoning (dimmed)"},
		{Name: "json", Command: execCommand, OneRun: true, Kind: B, Var: &c.jsonOut, Usage: "print one JSON object a line for each event instead of text (see the README's \"exec --json\")"},
		{Name: "resume", Command: execCommand, OneRun: true, Kind: S, Var: &c.resume, Check: c.checkResume,
			Usage: "continue the stored session `ID` (see dsh-acp sessions) instead of starting one"},
		{Name: "continue", Command: execCommand, OneRun: true, Kind: B, Var: &c.cont, Check: c.checkContinue,
			Usage: "continue the newest stored session of this working directory"},
		{Name: "mcp-config", Command: execCommand, Kind: S, Var: &c.mcpConfig,
			Usage: "start the MCP servers of `FILE` ({\"mcpServers\": {name: {command, args, env} | {url, headers}}})"},
	}
}

// execFlagSet is exec's flags (a superset of the server's) at their
// defaults, for what lists them: completion, the tests.
func execFlagSet() *flag.FlagSet {
	return (&config{}).table().For(execCommand).FlagSet("dsh-acp exec")
}

// oneOf checks a setting that takes one of a few words ("": its default).
func oneOf(name, v string, words ...string) error {
	for _, w := range words {
		if v == w {
			return nil
		}
	}
	var shown []string
	for _, w := range words {
		if w != "" {
			shown = append(shown, w)
		}
	}
	last := len(shown) - 1
	return fmt.Errorf("--%s must be %s or %s, got %q", name, strings.Join(shown[:last], ", "), shown[last], v)
}

func (c *config) checkMaxRequests() error {
	if c.maxRequests <= 0 {
		return fmt.Errorf("--max-requests must be positive, got %d", c.maxRequests)
	}
	return nil
}

func (c *config) checkContextWindow() error {
	if c.contextWindow < 0 {
		return fmt.Errorf("--context-window must be positive, got %d", c.contextWindow)
	}
	return nil
}

func (c *config) checkCompactAt() error {
	if !(c.compactAt > 0 && c.compactAt <= 1) { // NaN fails both
		return fmt.Errorf("--compact-at must be above 0 and at most 1, got %v", c.compactAt)
	}
	return nil
}

func (c *config) checkModelTimeout() error {
	if c.modelTimeout <= 0 {
		return fmt.Errorf("--model-timeout must be positive, got %v", c.modelTimeout)
	}
	return nil
}

func (c *config) checkThinking() error {
	switch c.thinking {
	case "", agent.ThinkingOff, agent.ThinkingHigh, agent.ThinkingMax:
		return nil
	}
	return fmt.Errorf("--thinking must be off, high or max, got %q", c.thinking)
}

// checkPrice parses --price into prices.
func (c *config) checkPrice() error {
	if c.price == "" {
		return nil
	}
	p, err := agent.ParsePrice(c.price)
	if err != nil {
		return fmt.Errorf("--price: %w", err)
	}
	c.prices = &p
	return nil
}

// checkTimeouts checks --timeout against --max-timeout.
func (c *config) checkTimeouts() error {
	positive := errors.New("--timeout and --max-timeout must be positive")
	switch {
	case c.timeout <= 0:
		return positive
	case c.maxTimeout <= 0:
		return settings.Because("max-timeout", positive)
	case c.timeout > c.maxTimeout:
		return settings.BecauseOneOf(fmt.Errorf("--timeout %v is above --max-timeout %v", c.timeout, c.maxTimeout), "timeout", "max-timeout")
	}
	return nil
}

func (c *config) checkMCPTimeouts() error {
	positive := errors.New("--mcp-start-timeout and --mcp-timeout must be positive")
	switch {
	case c.mcpStartTimeout <= 0:
		return positive
	case c.mcpTimeout <= 0:
		return settings.Because("mcp-timeout", positive)
	}
	return nil
}

func (c *config) checkTools() error {
	if c.tools != "all" && c.tools != "bash" {
		return fmt.Errorf("--tools must be all or bash, got %q", c.tools)
	}
	return nil
}

func (c *config) checkDefaultMode() error {
	switch c.defaultMode {
	case "ask", "auto":
	case "sandbox":
		if c.sandbox == "off" {
			// The fix is to drop --sandbox off: say where it is.
			return settings.Because("sandbox", errors.New("--default-mode sandbox needs the sandbox: drop --sandbox off"))
		}
	default:
		return fmt.Errorf("--default-mode must be ask, sandbox or auto, got %q", c.defaultMode)
	}
	return nil
}

func (c *config) checkSandboxRead() error {
	for i, p := range c.sandboxRead {
		if !filepath.IsAbs(p) {
			return settings.Element(i, fmt.Errorf("--sandbox-read needs an absolute path, got %q", p))
		}
		if _, err := os.Stat(p); err != nil {
			return settings.Element(i, fmt.Errorf("--sandbox-read %s: there is nothing there to let commands read (%v); give a path that exists", p, errors.Unwrap(err)))
		}
	}
	return nil
}

// emptyPattern refuses an empty --allow or --deny: as a prefix it would
// match every command (an empty --allow would run them all unasked).
func emptyPattern(name string, list []string) error {
	for i, p := range list {
		if strings.TrimSpace(p) == "" {
			return settings.Element(i, fmt.Errorf("--%s %q: an empty pattern would match every command; give a command prefix, e.g. --%s 'git status'", name, p, name))
		}
	}
	return nil
}

func (c *config) checkLogLevel() error {
	switch c.logLevel {
	case "", "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
}

// checkResume: a stored session needs the store (no-persist is the one at
// fault when the file says it).
func (c *config) checkResume() error {
	if c.resume != "" && c.noPersist {
		return settings.Because("no-persist", errors.New("--resume needs the store: drop --no-persist"))
	}
	return nil
}

func (c *config) checkContinue() error {
	switch {
	case c.cont && c.noPersist:
		return settings.Because("no-persist", errors.New("--continue needs the store: drop --no-persist"))
	case c.cont && c.resume != "":
		return errors.New("--resume and --continue cannot both be given: --continue picks the newest session of the directory")
	}
	return nil
}
