package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// confinedExecutor is an executor whose commands are confined by the real
// binary as their session's zygote, with Landlock alone (nons) or with
// namespaces; it skips b where the kernel has neither.
func confinedExecutor(b *testing.B, nons bool) *executor.Local {
	b.Helper()
	avail := probed()
	if avail.LandlockABI < 1 || (!nons && !avail.PIDNS) {
		b.Skip("not available")
	}
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Executable: binPath, Availability: avail, NoNamespaces: nons})
	if err != nil {
		b.Fatal(err)
	}
	c, err := sandbox.NewConfiner(sandbox.ConfinerOptions{Launcher: l, TempParent: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ex, err := executor.NewLocal(executor.Options{SpillDir: b.TempDir(), Confine: c})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ex.Close() })
	return ex
}

// BenchmarkSandboxRatio is the target as one figure: each iteration
// runs a bare `bash -c true` and then a foreground `true` through the
// confined executor, so both see the same machine at the same moment; "x"
// is confined time over bare time.
// go test -bench SandboxRatio -run '^$' -benchtime 500x -count 5 ./cmd/dsh-acp
func BenchmarkSandboxRatio(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		nons bool
	}{{"landlock", true}, {"namespaces", false}} {
		b.Run(m.name, func(b *testing.B) {
			ex := confinedExecutor(b, m.nons)
			spec := executor.Spec{Command: "true", Workdir: b.TempDir(), Owner: "s", Sandboxed: true}
			confined := func() {
				res, err := ex.Run(context.Background(), spec)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
			confined() // the session's zygote starts with its first command
			var bare, conf time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := exec.Command(bash, "-c", "true").Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				confined()
				bare += t1.Sub(t0)
				conf += time.Since(t1)
			}
			b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(conf.Nanoseconds())/float64(b.N), "confined-ns/op")
			b.ReportMetric(float64(conf)/float64(bare), "x")
		})
	}
}

// BenchmarkSandboxCapture1GiB is the executor's 1 GiB capture through the
// sandbox with namespaces, with the growth of the agent's peak RSS; compare
// with ./executor's BenchmarkCapture1GiB and BenchmarkDiscard1GiB:
// go test -bench SandboxCapture1GiB -run '^$' -benchtime 1x -count 3 ./cmd/dsh-acp
func BenchmarkSandboxCapture1GiB(b *testing.B) {
	ex := confinedExecutor(b, false)
	spec := executor.Spec{Workdir: b.TempDir(), Owner: "s", Sandboxed: true}
	ctx := context.Background()
	spec.Command = "seq 100000" // warm up, and start the zygote
	if _, err := ex.Run(ctx, spec); err != nil {
		b.Fatal(err)
	}
	const gib = 1 << 30
	spec.Command = "head -c 1073741824 /dev/zero"
	base := resetPeak()
	b.SetBytes(gib)
	b.ResetTimer()
	for range b.N {
		res, err := ex.Run(ctx, spec)
		if err != nil || res.Stdout.Bytes != gib {
			b.Fatalf("run: %v, %+v", err, res)
		}
		b.StopTimer()
		_ = os.Remove(res.Stdout.SpillPath)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(statusKiB("VmHWM")-base)/1024, "peak-rss-MiB")
}

// statusKiB is a field of /proc/self/status in KiB, -1 if missing.
func statusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return -1
}

// resetPeak resets VmHWM to the current RSS and returns it.
func resetPeak() int64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return statusKiB("VmHWM")
	}
	return statusKiB("VmRSS")
}
