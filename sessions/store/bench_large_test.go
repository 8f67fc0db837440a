package store_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// largeLogBytes is the size of the log BenchmarkLoadLarge loads: the
// 300 MB of the report that found a load taking 4× its file in memory.
const largeLogBytes = 300 << 20

// BenchmarkLoadLarge opens a 300 MB session in a fresh process (a helper
// child: the peak is then the load's, not the making of the file's) and
// reports the child's peak RSS over the file's size. The target is at
// most 2.
//
//	go test -run '^$' -bench LoadLarge -benchtime 3x ./sessions/store/
func BenchmarkLoadLarge(b *testing.B) {
	st := benchStore(b)
	sess, err := st.Create("large", "/work")
	if err != nil {
		b.Fatal(err)
	}
	// Command output as it is stored: many lines, JSON-escaped.
	out := strings.Repeat("drwxr-xr-x  2 user user  4096 Jan  1 00:00 some-directory-name\n", 1000)
	n := 0
	for i := 0; ; i++ {
		fi, err := os.Stat(st.Dir() + "/sessions/large.jsonl")
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() >= largeLogBytes {
			break
		}
		for _, p := range []store.Payload{
			store.Assistant{Text: "running ls", ToolCalls: []store.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "bash", Arguments: `{"command":"ls -la"}`}}},
			store.ToolResult{CallID: fmt.Sprintf("call_%d", i), Text: out, Title: "ls -la", ToolKind: "execute", Status: "completed"},
		} {
			if _, err := sess.Append(p); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := sess.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	if err := sess.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(st.Dir() + "/sessions/large.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var peak int64
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := testutil.Child(b, testutil.Context(b), "load", st.Dir(), "large")
		cmd.Stderr = os.Stderr
		got, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		if c, _ := strconv.Atoi(strings.TrimSpace(string(got))); c != n {
			b.Fatalf("loaded %s entries, want %d", got, n)
		}
		peak = max(peak, maxRSS(cmd.ProcessState.SysUsage().(*syscall.Rusage)))
	}
	b.StopTimer()
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(peak)/float64(fi.Size()), "RSS/file")
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/load")
}
