package docker_test

import (
	"context"
	"fmt"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// BenchmarkContainerStart is a session's first command: its container made,
// the helper copied in and started, then `true` through it. Once per
// session; the target is at most 1 s on the test engine.
func BenchmarkContainerStart(b *testing.B) {
	s := newSetup(b, setupOpts{})
	ctx := context.Background()
	var total time.Duration
	for i := range b.N {
		owner := fmt.Sprintf("bench-%d", i)
		start := time.Now()
		if _, err := s.ex.Run(ctx, executor.Spec{Command: "true", Owner: owner}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		s.ex.KillOwned(owner)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
}

// BenchmarkTrueDockerVsLocal runs `true` through the docker executor and
// through a local one, alternating, and reports both medians: the cost of
// a command in a running container over a local one. Target: at most 5 ms
// median through docker.
func BenchmarkTrueDockerVsLocal(b *testing.B) {
	s := newSetup(b, setupOpts{})
	local, err := executor.NewLocal(executor.Options{DefaultWorkdir: s.cwd, SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = local.Close() })
	ctx := context.Background()
	run := func(ex *executor.Local) time.Duration {
		start := time.Now()
		res, err := ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("true: %v, %+v", err, res)
		}
		return time.Since(start)
	}
	run(s.ex) // the container's start is not a command's cost
	var dock, loc []time.Duration
	b.ResetTimer()
	for range b.N {
		dock = append(dock, run(s.ex))
		loc = append(loc, run(local))
	}
	b.StopTimer()
	b.ReportMetric(median(dock), "docker-median-ms")
	b.ReportMetric(median(loc), "local-median-ms")
}

func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// BenchmarkCapture1GiB is 1 GiB of stdout from a command in a container
// (tail in memory, every byte to the spill file) and the growth of the
// agent's peak RSS while it flows.
func BenchmarkCapture1GiB(b *testing.B) {
	s := newSetup(b, setupOpts{})
	ctx := context.Background()
	if _, err := s.ex.Run(ctx, executor.Spec{Command: "seq 100000", Owner: "s"}); err != nil { // warm up
		b.Fatal(err)
	}
	const gib = 1 << 30
	base := proctab.ResetPeakRSS()
	b.SetBytes(gib)
	b.ResetTimer()
	for range b.N {
		res, err := s.ex.Run(ctx, executor.Spec{Command: "head -c 1073741824 /dev/zero", Owner: "s"})
		if err != nil || res.Stdout.Bytes != gib {
			b.Fatalf("run: %v, %d bytes", err, res.Stdout.Bytes)
		}
		b.StopTimer()
		_ = os.Remove(res.Stdout.SpillPath)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(proctab.SelfStatusKiB("VmHWM")-base)/1024, "peak-rss-MiB")
}
