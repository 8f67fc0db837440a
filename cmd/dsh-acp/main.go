// Command dsh-acp is a coding agent for editors: Zed, or any Agent Client
// Protocol client, launches it and speaks ACP over stdin/stdout. With the
// exec subcommand it runs one prompt headless and prints the stream.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/completion"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/secretenv"
	"github.com/dsh-acp/dsh-acp/internal/storecmd"
)

func main() {
	// First of all: a sandbox helper (this binary re-executed to confine
	// one command) must not touch anything of the agent's.
	sandbox.HelperMain(sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	if len(os.Args) > 1 && os.Args[1] == docker.HelperMode {
		// Inside a session's container (--executor docker).
		os.Exit(docker.HelperMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == watchdogMode {
		os.Exit(runWatchdog(os.Args[2:]))
	}
	// Process-wide hardening happens here, before anything else runs:
	// credentials out of the environment block, memory not readable.
	dropped, err := secretenv.Hide()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		os.Exit(1)
	}
	if err := secretenv.Protect(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		os.Exit(1)
	}
	// SIGHUP too: a closed terminal ends the agent as cleanly as SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	code := program{process: true, dropped: dropped}.run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// command is one subcommand of the binary. Subcommands live in one table
// (commandTable): help, completion and dispatch all read it.
type command struct {
	name string
	// args is the synopsis after the name; summary one line for help.
	args, summary string
	run           func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int
}

// program is the binary's commands. process: the program itself (main),
// not a test calling run in-process: it runs a watchdog that ends its
// commands if it dies, and exec exits on a second Ctrl-C.
type program struct {
	process bool
	// dropped are the credential variables secretenv.Hide dropped (the
	// start-up log names them).
	dropped []string
}

// commandTable is every subcommand, in the order help lists them, as help
// and completion read them.
func commandTable() []command { return program{}.commands() }

// commands is every subcommand, in the order help lists them. A function,
// not a variable: help and completion read the table itself.
func (pr program) commands() []command {
	return []command{
		{"serve", "[flags]", "serve the Agent Client Protocol on stdin/stdout (the default)", pr.serve},
		{"exec", "[flags] PROMPT...", "run one prompt and print what happens (PROMPT - or piped: read stdin)", pr.exec},
		{"sessions", "[show ID | rm ID... | prune --older-than D] [--json|--ids]", "list, show, delete or prune the stored sessions", storeCommand("dsh-acp sessions", storecmd.Sessions)},
		{"login", "[--base-url URL]", "sign in: ask for the endpoint's API key, check it, store it for that endpoint", runLogin},
		{"logout", "[--base-url URL]", "remove the key stored for the endpoint", runLogout},
		{"rules", "[rm N]", "list or remove the commands always allowed in a project", storeCommand("dsh-acp rules", storecmd.Rules)},
		{"config", "[flags]", "print the effective settings and where each came from", runConfig},
		{"completion", "bash|zsh|fish", "print a shell completion script", runCompletion},
		{"help", "[COMMAND]", "print this help, or a command's own", runHelp},
		{"version", "", "print the version", runVersion},
	}
}

func (pr program) lookup(name string) (command, bool) {
	for _, c := range pr.commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	var names []string
	for _, c := range commandTable() {
		names = append(names, c.name)
	}
	return names
}

// run is the whole program with its streams and environment given, so
// tests can drive it. It returns the exit code: 0 on a clean end (stdin
// closed, SIGINT or SIGTERM), 2 for bad flags, 1 for anything else; exec
// has its own (see execclient.Usage).
func (pr program) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if n := len(args); n > 1 && args[0] == "serve" && (args[n-1] == "login" || args[n-1] == "logout") {
		// The same with the server named: `dsh-acp serve --base-url URL login`.
		args = args[1:]
	}
	if n := len(args); n > 0 && strings.HasPrefix(args[0], "-") && (args[n-1] == "login" || args[n-1] == "logout") {
		// An editor's terminal sign-in runs the agent's own command line
		// with the auth method's args added: `dsh-acp --base-url URL
		// --allow … login`. Its flags then say which endpoint to sign in to.
		args = append([]string{args[n-1]}, args[:n-1]...)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return pr.serve(ctx, args, stdin, stdout, stderr, getenv)
	}
	c, ok := pr.lookup(args[0])
	if !ok {
		// Never guess that a stray word was meant as a prompt: exec would
		// send it to a paid model.
		fmt.Fprintf(stderr, "dsh-acp: unknown command %q (commands: %s)\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	return c.run(ctx, args[1:], stdin, stdout, stderr, getenv)
}

// bareTerminalLine is what a person who started the server by hand reads:
// it waits for an editor's ACP frames, which looks like a hang.
const bareTerminalLine = "dsh-acp speaks the Agent Client Protocol on stdin for editors (Ctrl-D ends it); from a terminal, use dsh-acp exec \"PROMPT\" (dsh-acp help)"

func (pr program) serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, err := parseServe(args, getenv)
	if code, done := settle(cfg, err, "dsh-acp", stdout, stderr); done {
		return code
	}
	cfg.process, cfg.dropped = pr.process, pr.dropped
	if isTerminal(stdin) {
		fmt.Fprintln(stderr, bareTerminalLine)
	}
	if err := serve(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

func runHelp(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	if len(args) == 0 {
		_, err := parseServe([]string{"--help"}, getenv)
		code, _ := settle(nil, err, "dsh-acp", stdout, stderr)
		return code
	}
	c, ok := program{}.lookup(args[0])
	if !ok || len(args) > 1 {
		fmt.Fprintf(stderr, "dsh-acp help: no command %q (commands: %s)\n", strings.Join(args, " "), strings.Join(commandNames(), ", "))
		return 2
	}
	if c.name == "help" || c.name == "version" {
		fmt.Fprintf(stdout, "Usage:\n  dsh-acp %s %s\n\n%s\n", c.name, c.args, c.summary)
		return 0
	}
	// Every other command prints its own usage on --help, to stdout.
	return c.run(context.Background(), []string{"--help"}, nil, stdout, stderr, getenv)
}

func runCompletion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, _ env) int {
	var cs []completion.Command
	for _, c := range commandTable() {
		cs = append(cs, completion.Command{Name: c.name, Summary: c.summary})
	}
	return completion.Run(args, stdout, stderr, cs, execFlagSet())
}

func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, _ env) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "dsh-acp version: unexpected argument %q\n", args[0])
		return 2
	}
	fmt.Fprintln(stdout, "dsh-acp", version())
	return 0
}

// isTerminal reports whether s is a terminal (an *os.File that is one).
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// settle ends the program where flags decide it: help (to stdout, exit 0),
// a bad flag (to stderr, exit 2), or --version — the one line a person
// asked for, with no protocol being served.
func settle(cfg *config, err error, prefix string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done := settings.Settle(err, prefix, stdout, stderr); done {
		return code, true
	}
	if cfg.version {
		fmt.Fprintln(stdout, "dsh-acp", version())
		return 0, true
	}
	return 0, false
}

// serve runs the ACP server until stdin closes or ctx is done, then kills
// every process group it started.
func serve(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer) error {
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return cfg.blame("log-file", err)
	}
	defer closeLog()
	defer log.Sync() //nolint:errcheck // nothing to do if the log sink fails at exit

	a, err := newApp(cfg, log)
	if err != nil {
		return err
	}
	log.Info("serving ACP on stdio", zap.String("version", version()), zap.Int("pid", os.Getpid()))
	serveErr := a.agent.Serve(ctx, stdin, stdout)
	closeErr := a.close()
	log.Info("stopped")
	return errors.Join(serveErr, closeErr)
}
