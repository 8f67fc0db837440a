package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dsh-acp/dsh-acp/internal/storecmd"
)

// storeCommand is a command over the state directory (storecmd), given
// the directory's default as the agent finds it: DSH_STATE_DIR, else
// config.toml's state-dir, so it reads the store the agent writes.
func storeCommand(name string, run func([]string, storecmd.Env) int) func(context.Context, []string, io.Reader, io.Writer, io.Writer, env) int {
	return func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
		dir, err := stateDirDefault(getenv)
		if err != nil {
			fmt.Fprintln(stderr, name+":", err)
			return 2
		}
		return run(args, storecmd.Env{
			Stdout: stdout, Stderr: stderr, StateDir: dir, Footer: usageFooter,
			Dir: func(flagValue string) (string, error) {
				return (&config{getenv: getenv, stateDir: flagValue}).storeDir()
			},
		})
	}
}
