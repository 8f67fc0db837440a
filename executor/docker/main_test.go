package docker_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(testutil.ChildEnv); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		dockertest.RemoveHelper()
		os.Exit(code)
	}))
}

// testLabel marks every container these tests make, and only those: the
// checks for leftovers look at nothing else.
const testLabel = "dev.dsh-acp.test"

// grace is the tests' SIGTERM→SIGKILL grace.
const grace = 500 * time.Millisecond

// setup is one test's engine, confiner and executor.
type setup struct {
	eng    dockertest.Engine
	conf   *docker.Confiner
	ex     *executor.Local
	cwd    string
	run    string // the test's label value
	helper string
}

type setupOpts struct {
	host      string // overrides the engine's address
	network   string
	cwd       string
	tailBytes int
}

func newSetup(t testing.TB, o setupOpts) *setup {
	t.Helper()
	return newSetupWith(t, o, nil)
}

// newSetupRead is newSetup with --docker-read paths.
func newSetupRead(t testing.TB, o setupOpts, read []string) *setup {
	t.Helper()
	return newSetupWith(t, o, func(opts *docker.Options) { opts.Read = read })
}

// newSetupWith is newSetup with the Confiner's options changed by edit.
func newSetupWith(t testing.TB, o setupOpts, edit func(*docker.Options)) *setup {
	t.Helper()
	eng := dockertest.Need(t)
	s := &setup{eng: eng, helper: dockertest.Helper(t), run: t.Name() + "-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""), cwd: o.cwd}
	if s.cwd == "" {
		s.cwd = t.TempDir()
	}
	opts := docker.Options{
		Image:     eng.Image,
		Helper:    s.helper,
		Host:      o.host,
		Network:   o.network,
		KillGrace: grace,
		Labels:    map[string]string{testLabel: s.run},
		Logger:    zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	}
	if edit != nil {
		edit(&opts)
	}
	conf, err := docker.NewConfiner(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.conf = conf
	ex, err := executor.NewLocal(executor.Options{
		Limits:         executor.Limits{KillGrace: grace, LeftoverGrace: 200 * time.Millisecond, TailBytes: o.tailBytes},
		DefaultWorkdir: s.cwd,
		SpillDir:       t.TempDir(),
		Confine:        conf,
		ConfineAll:     true,
		Logger:         zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.ex = ex
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := s.containers(t); left != "" {
			t.Errorf("containers left after Close: %s", left)
		}
	})
	return s
}

// containers lists the test's containers (ids), as the engine sees them.
func (s *setup) containers(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+testLabel+"="+s.run).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func (s *setup) runCmd(t testing.TB, owner, command string) executor.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.ex.Run(ctx, executor.Spec{Command: command, Owner: owner, Root: s.cwd})
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}

func TestRunInContainer(t *testing.T) {
	s := newSetup(t, setupOpts{})
	res := s.runCmd(t, "s1", `echo out; echo err >&2; pwd; id -u; test -e /.dockerenv && echo in-container; exit 3`)
	want := "out\n" + s.cwd + "\n" + itoa(os.Getuid()) + "\nin-container\n"
	if res.Stdout.Text != want || res.Stderr.Text != "err\n" || res.ExitCode != 3 || res.Signal != "" {
		t.Fatalf("got stdout %q stderr %q exit %d signal %q; want stdout %q", res.Stdout.Text, res.Stderr.Text, res.ExitCode, res.Signal, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
