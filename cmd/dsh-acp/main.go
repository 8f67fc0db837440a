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

	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// useWatchdog: the program (not a test building the app in-process) runs
// a watchdog that ends its commands if it dies.
var useWatchdog bool

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
	if err := hideSecrets(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		os.Exit(1)
	}
	if err := protectProcess(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		os.Exit(1)
	}
	useWatchdog = true
	// SIGHUP too: a closed terminal ends the agent as cleanly as SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is the whole program minus process globals, so tests can drive it.
// It returns the exit code: 0 on a clean end (stdin closed, SIGINT or
// SIGTERM), 2 for bad flags, 1 for anything else; exec has its own (see
// runExec).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "exec":
		return runExec(ctx, args, stdout, stderr, getenv)
	case "sessions":
		return runSessions(args, stdout, stderr, getenv)
	case "", "serve":
	case "help":
		_, err := parseServe([]string{"--help"}, env(getenv))
		code, _ := settle(nil, err, "dsh-acp", stdout, stderr)
		return code
	case "version":
		fmt.Fprintln(stdout, "dsh-acp", version)
		return 0
	default:
		// Never guess that a stray word was meant as a prompt: exec would
		// send it to a paid model.
		fmt.Fprintf(stderr, "dsh-acp: unknown command %q (commands: serve, exec, sessions, help, version)\n", cmd)
		return 2
	}
	cfg, err := parseServe(args, env(getenv))
	if code, done := settle(cfg, err, "dsh-acp", stdout, stderr); done {
		return code
	}
	if err := serve(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

// settle ends the program where flags decide it: help (to stdout, exit 0),
// a bad flag (to stderr, exit 2), or --version — the one line a person
// asked for, with no protocol being served.
func settle(cfg *config, err error, prefix string, stdout, stderr io.Writer) (code int, done bool) {
	var help *helpError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.text)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", prefix, err, prefix)
		return 2, true
	case cfg.version:
		fmt.Fprintln(stdout, "dsh-acp", version)
		return 0, true
	}
	return 0, false
}

// serve runs the ACP server until stdin closes or ctx is done, then kills
// every process group it started.
func serve(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer) error {
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	defer log.Sync() //nolint:errcheck // nothing to do if the log sink fails at exit

	a, err := newApp(cfg, log)
	if err != nil {
		return err
	}
	log.Info("serving ACP on stdio", zap.String("version", version), zap.Int("pid", os.Getpid()))
	serveErr := a.agent.Serve(ctx, stdin, stdout)
	closeErr := a.close()
	log.Info("stopped")
	return errors.Join(serveErr, closeErr)
}
