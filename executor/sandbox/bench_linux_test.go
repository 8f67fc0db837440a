package sandbox_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// BenchmarkTrue compares `bash -c true` bare with the same through a
// session's zygote, in both modes, and the first command of a session
// (which starts the zygote): go test -bench True -run '^$' ./executor/sandbox
func BenchmarkTrue(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(bashPath(), "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range []mode{{name: "landlock", nons: true}, {name: "namespaces"}} {
		a := probe()
		l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: a, NoNamespaces: m.nons})
		if err != nil || (!m.nons && !l.Namespaces()) {
			continue
		}
		p := sandbox.Policy{Workdir: b.TempDir(), TempDir: b.TempDir(), Shell: bashPath()}
		env := os.Environ()
		run := func(b *testing.B, z *sandbox.Zygote) {
			w, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			pr, err := z.Start("true", env, w, w)
			if err != nil {
				b.Fatal(err)
			}
			if ws, err := pr.Wait(); err != nil || ws.ExitStatus() != 0 {
				b.Fatalf("wait: %v %v", ws, err)
			}
		}
		b.Run(m.name, func(b *testing.B) {
			z, err := l.Zygote(p)
			if err != nil {
				b.Fatal(err)
			}
			defer z.Close()
			for b.Loop() {
				run(b, z)
			}
		})
		b.Run(m.name+"/first", func(b *testing.B) {
			for b.Loop() {
				z, err := l.Zygote(p)
				if err != nil {
					b.Fatal(err)
				}
				run(b, z)
				if err := z.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
