package sandbox_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// BenchmarkTrue compares `bash -c true` bare with the same through the
// helper, in both modes: go test -bench True -run '^$' ./executor/sandbox
func BenchmarkTrue(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(bashPath(), "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range []mode{{name: "landlock", nons: true}, {name: "namespaces"}} {
		b.Run(m.name, func(b *testing.B) {
			a := probe()
			if a.LandlockABI < 1 || (!m.nons && !a.PIDNS) {
				b.Skip("not available")
			}
			l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: a, NoNamespaces: m.nons})
			if err != nil {
				b.Fatal(err)
			}
			p := sandbox.Policy{Workdir: b.TempDir(), TempDir: b.TempDir(), Shell: bashPath()}
			env := os.Environ()
			for b.Loop() {
				c, err := l.Command("true", p, env)
				if err != nil {
					b.Fatal(err)
				}
				cmd := c.Cmd()
				err = cmd.Start()
				_ = c.Close()
				if err == nil {
					err = cmd.Wait()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
