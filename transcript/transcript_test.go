package transcript_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

const transcriptsDir = "../testdata/transcripts"

// TestTranscript runs every scenario in testdata/transcripts against the
// built binary and compares its transcript with the scenario's golden file.
// With -update it rewrites the goldens instead.
func TestTranscript(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(transcriptsDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in " + transcriptsDir)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, file, name)
		})
	}
}

// testExecutorEnv is the test switch: with DSH_TEST_EXECUTOR=sandbox the
// binary confines every command (the sandboxed executor) and every golden
// must still hold, byte for byte, but for the scenarios below.
const testExecutorEnv = "DSH_TEST_EXECUTOR"

// notSandboxed are the scenarios that write outside their session's cwd on
// purpose, which the sandbox refuses, by name and why: they are skipped
// under the switch. None does today: the harness finds a scenario's
// processes by their marks in the host's /proc and copies the agent's log
// where commands can read it, so its bookkeeping needs no such write.
var notSandboxed = map[string]string{}

// notInContainer are the scenarios of what only the sandbox does, skipped
// with DSH_TEST_EXECUTOR=docker, by name and why.
var notInContainer = map[string]string{
	"25-auto-in-sandbox": "the Auto in sandbox mode is the sandbox's (Landlock's Permission denied, its private TMPDIR); with --executor docker the container confines and the mode is not offered",
	"41-sandbox-files":   "the Auto in sandbox mode is the sandbox's; with --executor docker the mode is not offered",
	"33-fork-sandbox":    "the fork of a session in the Auto in sandbox mode, which is the sandbox's; with --executor docker the mode is not offered",
	"45-roots-sandbox":   "the other roots of a session in the Auto in sandbox mode, which is the sandbox's; with --executor docker the mode is not offered (44-roots runs there: the container mounts the roots)",
	"39-file-permission": "the file tools read outside the session's directory, which a container does not see (with --executor docker that read is refused)",
}

// TestFileToolsRemoteEngine runs the file tools' scenarios with the
// binary's commands and file operations in containers of an engine it
// takes for a remote one (tcp://, here in front of the test engine): the
// helper in each container does the file operations, and the model must
// see the same bytes.
func TestFileToolsRemoteEngine(t *testing.T) {
	eng := dockertest.Need(t)
	files, err := filepath.Glob(filepath.Join(transcriptsDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var host string
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		if n, err := strconv.Atoi(name[:2]); (err != nil || n < 34 || n > 43) && !undoScenarios[name] {
			continue
		}
		if host == "" {
			host = "tcp://" + dockertest.TCPProxy(t, eng.Host)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if why, ok := notRemote[name]; ok {
				t.Skip(why)
			}
			runScenarioOn(t, file, name, host)
		})
	}
	if host == "" {
		t.Fatal("no file tools' scenarios (34 to 43) in " + transcriptsDir)
	}
}

// undoScenarios are /undo's, whose reads, writes and removals are file
// operations too.
var undoScenarios = map[string]bool{"44-undo": true, "45-undo-changed-since": true}

// notRemote are the file tools' scenarios skipped with a remote engine.
var notRemote = map[string]string{
	"39-file-permission": notInContainer["39-file-permission"],
	"41-sandbox-files":   notInContainer["41-sandbox-files"],
	"40-client-fs":       "the editor's files are this host's, and a remote engine's container has its own: reads and writes go to the container, not through the editor",
}

func runScenario(t *testing.T, file, name string) {
	if why, ok := notSandboxed[name]; ok && os.Getenv(testExecutorEnv) == "sandbox" {
		t.Skip("writes outside the cwd on purpose: " + why)
	}
	if why, ok := notInContainer[name]; ok && os.Getenv(testExecutorEnv) == "docker" {
		t.Skip(why)
	}
	runScenarioOn(t, file, name, "")
}

// runScenarioOn runs one scenario; with dockerHost, in containers of the
// engine at that address whatever DSH_TEST_EXECUTOR says.
func runScenarioOn(t *testing.T, file, name, dockerHost string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// A short root keeps paths readable in failure messages; the golden
	// only ever shows $TMP.
	root, err := os.MkdirTemp("", "dsh-tr-")
	if err != nil {
		t.Fatal(err)
	}
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	if *keep {
		t.Logf("keeping %s", root)
	} else {
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	sc, err := parseScenario(name, data, root)
	if err != nil {
		t.Fatal(err)
	}
	sc.dockerHost = dockerHost
	if slices.Contains(sc.flags, "--sandbox=on") {
		if abi, err := ll.LandlockGetABIVersion(); err != nil || abi < 1 {
			t.Skip("the scenario asks for the sandbox, and this kernel has no Landlock")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()

	h := start(t, ctx, sc, root)
	runErr := h.run()
	cancel() // no step waits any more; finish has its own bounds
	finishErrs := h.finish()

	failed := false
	if runErr != nil {
		t.Error(runErr)
		failed = true
	}
	for _, err := range finishErrs {
		t.Error(err)
		failed = true
	}
	frames, _ := h.wire.snapshot()
	if *keep {
		var raw []byte
		for _, f := range frames {
			raw = append(raw, f.dir+" "...)
			raw = append(raw, f.line...)
			raw = append(raw, '\n')
		}
		if err := os.WriteFile(filepath.Join(root, "wire.txt"), raw, 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, err := range checkLiveUpdates(frames) {
		t.Error(err)
		failed = true
	}
	records, err := h.modelRequests()
	if err != nil {
		t.Fatal(err)
	}
	got, errs := render(sc, root, transcriptsDir, frames, records)
	for _, err := range errs {
		t.Error(err)
		failed = true
	}

	golden := filepath.Join(transcriptsDir, name+".golden")
	if *update {
		if runErr != nil {
			t.Logf("not updating %s: the scenario failed", golden)
		} else if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%v (run with -update to create it)", err)
			failed = true
		} else if diff := compareGolden(string(want), got); diff != "" {
			t.Errorf("%s differs from the run:\n%s", golden, diff)
			failed = true
		}
	}
	if failed {
		t.Log(h.diagnostics())
	}
}
