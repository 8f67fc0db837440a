package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// A command that asks to be confined never runs unconfined: without a
// Confiner it does not start at all.
func TestSandboxedWithoutConfinerDoesNotRun(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	dir := t.TempDir()
	_, err := l.Run(testutil.Context(t), executor.Spec{Command: "touch ran", Workdir: dir, Sandboxed: true})
	if !errors.Is(err, executor.ErrNoSandbox) {
		t.Errorf("Run = %v, want ErrNoSandbox", err)
	}
	if _, err := l.Start(executor.Spec{Command: "touch ran", Workdir: dir, Sandboxed: true}); !errors.Is(err, executor.ErrNoSandbox) {
		t.Errorf("Start = %v, want ErrNoSandbox", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
	if _, err := executor.NewLocal(executor.Options{ConfineAll: true}); err == nil {
		t.Error("ConfineAll without a Confiner accepted")
	}
}

// Each owner's spill files are in a directory of its own, which KillOwned
// removes.
func TestSpillDirPerOwner(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 10}, SpillDir: t.TempDir()})
	ctx := testutil.Context(t)
	dirs := map[string]string{}
	for _, owner := range []string{"a", "b"} {
		res, err := l.Run(ctx, executor.Spec{Command: "seq 100", Owner: owner, Workdir: t.TempDir()})
		if err != nil || res.Stdout.SpillPath == "" {
			t.Fatalf("%s: %v %+v", owner, err, res.Stdout)
		}
		dirs[owner] = filepath.Dir(res.Stdout.SpillPath)
	}
	if dirs["a"] == dirs["b"] || filepath.Dir(dirs["a"]) != filepath.Dir(dirs["b"]) {
		t.Errorf("owners' spill dirs %v: want two siblings", dirs)
	}
	// OwnerSpillDir is that directory, for spill files of the owner's
	// that are not the executor's (MCP results).
	for owner, dir := range dirs {
		if got, err := l.OwnerSpillDir(owner); err != nil || got != dir {
			t.Errorf("OwnerSpillDir(%s) = %q, %v; want %q", owner, got, err, dir)
		}
	}
	other := filepath.Join(dirs["a"], "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	l.KillOwned("a")
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a's other spill files after KillOwned: %v", err)
	}
	if _, err := os.Stat(dirs["a"]); !os.IsNotExist(err) {
		t.Errorf("a's spill dir after KillOwned: %v", err)
	}
	if _, err := os.Stat(dirs["b"]); err != nil {
		t.Errorf("b's spill dir: %v", err)
	}
}
