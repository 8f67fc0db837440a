package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOWhereAFileIsExpected: --log-file, --script and --script-record
// (as flags, and log-file from config.toml) naming a FIFO end the start
// at once with an error naming the setting and the path — open(2) of a
// FIFO would otherwise wait for the other end forever.
func TestFIFOWhereAFileIsExpected(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// args and file (config.toml) name the FIFO as "FIFO".
		args []string
		file string
		want string
	}{
		{"log-file", []string{"--log-file", "FIFO"}, "", "--log-file"},
		{"log-file in config.toml", nil, "log-file = \"FIFO\"\n", "--log-file"},
		{"script", []string{"--script", "FIFO"}, "", "--script"},
		{"script-record", []string{"--script-record", "FIFO"}, "", "--script-record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			fifo := filepath.Join(t.TempDir(), "pipe")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			cfgHome := t.TempDir()
			if c.file != "" {
				if err := os.MkdirAll(filepath.Join(cfgHome, "dsh-acp"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(cfgHome, "dsh-acp", "config.toml"), []byte(strings.ReplaceAll(c.file, "FIFO", fifo)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"exec", "--cwd", t.TempDir()}
			for _, a := range c.args {
				args = append(args, strings.ReplaceAll(a, "FIFO", fifo))
			}
			if !strings.Contains(strings.Join(c.args, " "), "--script FIFO") {
				args = append(args, "--script", writeScript(t, `{"text":"Done."}`))
			}
			cmd := exec.CommandContext(ctx, binPath, append(args, "hi")...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfgHome, "DSH_STATE_DIR=" + t.TempDir()}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("the start hung on the FIFO; stderr: %s", errb.String())
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Errorf("exit %v, want a failure", err)
			}
			if s := errb.String(); !strings.Contains(s, c.want) || !strings.Contains(s, fifo) || !strings.Contains(s, "not a regular file") {
				t.Errorf("stderr does not say %s %s is not a regular file: %q", c.want, fifo, s)
			}
		})
	}
}
