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
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 2
	}
	if cfg.version {
		// The one line a person asked for; no protocol is being served.
		fmt.Fprintln(stdout, "dsh-acp", version)
		return 0
	}
	if err := serve(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 1
	}
	return 0
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
