package main

import (
	"context"
	"os/exec"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// BenchmarkSandboxTrue compares a foreground `true` through the executor,
// unconfined and confined with the real binary as the helper, with a bare
// `bash -c true` in the same run:
// go test -bench SandboxTrue -run '^$' ./cmd/dsh-acp
func BenchmarkSandboxTrue(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(bash, "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	avail := probed()
	run := func(b *testing.B, confine executor.Confiner) {
		ex, err := executor.NewLocal(executor.Options{SpillDir: b.TempDir(), Confine: confine})
		if err != nil {
			b.Fatal(err)
		}
		defer ex.Close()
		spec := executor.Spec{Command: "true", Workdir: b.TempDir(), Owner: "s", Sandboxed: confine != nil}
		for b.Loop() {
			res, err := ex.Run(context.Background(), spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
	b.Run("executor", func(b *testing.B) { run(b, nil) })
	for _, m := range []struct {
		name string
		nons bool
	}{{"sandbox-landlock", true}, {"sandbox-namespaces", false}} {
		b.Run(m.name, func(b *testing.B) {
			if avail.LandlockABI < 1 || (!m.nons && !avail.PIDNS) {
				b.Skip("not available")
			}
			l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Executable: binPath, Availability: avail, NoNamespaces: m.nons})
			if err != nil {
				b.Fatal(err)
			}
			c, err := sandbox.NewConfiner(sandbox.ConfinerOptions{Launcher: l, TempParent: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			run(b, c)
		})
	}
}
