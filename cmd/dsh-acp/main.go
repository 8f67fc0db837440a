// Command dsh-acp is a coding agent for editors: Zed, or any Agent Client
// Protocol client, launches it and speaks ACP over stdin/stdout. With the
// exec subcommand it runs one prompt headless and prints the stream.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
)

func main() {
	if err := hideSecrets(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is the whole program minus process globals, so tests can drive it.
// It returns the exit code: 0 on a clean end (stdin closed, SIGINT or
// SIGTERM), 2 for bad flags, 1 for anything else.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == "exec" {
		return runExec(ctx, args[1:], stdout, stderr, getenv)
	}
	cfg, err := parseServe(args, env(getenv), stderr)
	if code, done := settle(cfg, err, "dsh-acp", stdout, stderr); done {
		return code
	}
	if err := serve(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

// settle ends the program where flags decide it: help, a bad flag (exit
// 2), or --version — the one line a person asked for, with no protocol
// being served.
func settle(cfg *config, err error, prefix string, stdout, stderr io.Writer) (code int, done bool) {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		fmt.Fprintln(stderr, prefix+":", err)
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
