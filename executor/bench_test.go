package executor_test

import (
	"context"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Run them with: go test -run XXX -bench . -benchmem ./executor
// (the 1 GiB ones with -benchtime=1x).

func benchLocal(b *testing.B) *executor.Local {
	b.Helper()
	l, err := executor.NewLocal(executor.Options{DefaultWorkdir: b.TempDir(), SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

func BenchmarkRunTrue(b *testing.B) {
	l := benchLocal(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := l.Run(ctx, executor.Spec{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecCommandTrue is the floor RunTrue is measured against.
func BenchmarkExecCommandTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

const gib = 1 << 30

var gibCmd = "head -c 1073741824 /dev/zero"

// BenchmarkCapture1GiB captures 1 GiB of stdout (tail in memory, every byte
// to the spill file) and reports the growth of peak RSS while doing it.
func BenchmarkCapture1GiB(b *testing.B) {
	l := benchLocal(b)
	ctx := context.Background()
	if _, err := l.Run(ctx, executor.Spec{Command: "seq 100000"}); err != nil { // warm up
		b.Fatal(err)
	}
	base := proctab.ResetPeakRSS()
	b.SetBytes(gib)
	b.ResetTimer()
	for range b.N {
		res, err := l.Run(ctx, executor.Spec{Command: gibCmd})
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

// BenchmarkDiscard1GiB is the same command copied to io.Discard by os/exec.
func BenchmarkDiscard1GiB(b *testing.B) {
	b.SetBytes(gib)
	for range b.N {
		cmd := exec.Command("bash", "-c", gibCmd)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrueAmongIdleTasks runs 100 concurrent `true` commands while
// 1,000 background tasks (100 owners × 10 `sleep 1000`) sit idle, and
// reports the latency percentiles of one command. A command's cost must not
// grow with the number of processes on the machine.
//
//	go test -run '^$' -bench TrueAmongIdleTasks -benchtime=5x ./executor
func BenchmarkTrueAmongIdleTasks(b *testing.B) {
	for _, idle := range []int{0, 1000} {
		b.Run("idle="+strconv.Itoa(idle), func(b *testing.B) { benchTrueAmong(b, idle) })
	}
}

func benchTrueAmong(b *testing.B, idle int) {
	l := benchLocal(b)
	for o := range idle / 10 {
		for range 10 {
			if _, err := l.Start(executor.Spec{Command: "sleep 1000", Owner: "o" + strconv.Itoa(o)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				start := time.Now()
				if _, err := l.Run(ctx, executor.Spec{Command: "true"}); err != nil {
					b.Error(err)
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
