package transcript_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

var (
	update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/transcripts")
	keep   = flag.Bool("keep", false, "keep each scenario's temporary root (log, script, model requests) and print its path")
)

// binPath is the dsh-acp binary built once for the whole run.
var binPath string

// TestMain builds the binary under test once, runs the tests, checks for
// leaked goroutines and removes the build directory.
func TestMain(m *testing.M) {
	if mode := os.Getenv(mcpModeEnv); mode != "" {
		os.Exit(mcpMain(mode))
	}
	flag.Parse()
	// Scenarios spend their time waiting for child processes, not on the
	// CPU: unless -parallel was given, run more of them at once than
	// GOMAXPROCS (the default), which on 2 cores would serialise them.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
	dir, err := os.MkdirTemp("", "dsh-acp-transcript-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "transcript: temp dir:", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "dsh-acp")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		// A race-enabled test run tests a race-enabled binary: a data race
		// in the agent then fails the scenario (exit code 66, report on
		// stderr).
		args = append(args, "-race")
	}
	args = append(args, "github.com/dsh-acp/dsh-acp/cmd/dsh-acp")
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "transcript: go build:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if dockertest.Required() {
		// The binary under test is race-enabled, so dynamically linked:
		// the containers get a static build beside it, which is where the
		// binary looks for one (docker.LocateHelper).
		if err := dockertest.BuildHelper(filepath.Join(dir, "dsh-acp-helper")); err != nil {
			fmt.Fprintln(os.Stderr, "transcript:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		dockertest.RemoveHelper()
		os.Exit(code)
	}))
}
