package store_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// cpuTime is the CPU time (user + system) this process has used so far:
// the machine that runs the benchmarks is shared, so wall time per op
// measures the neighbours as much as the code. Benchmarks report both.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// benchStore is a store in a temporary dir, with the real clock.
func benchStore(b *testing.B) *store.Store {
	b.Helper()
	st, err := store.New(store.Options{Dir: filepath.Join(b.TempDir(), "state")})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// turn appends what one one-tool-call prompt stores: the prompt, the
// assistant message with its call, the result, the closing answer, the
// usage.
func turn(b *testing.B, sess *store.Session, i int) {
	b.Helper()
	out := strings.Repeat("a line of command output\n", 20)
	for _, p := range []store.Payload{
		store.Prompt{Text: fmt.Sprintf("prompt %d: list the files and tell me which is largest", i)},
		store.Assistant{MessageID: fmt.Sprintf("m%da", i), Reasoning: "I should run ls -la.", ToolCalls: []store.ToolCall{
			{ID: fmt.Sprintf("call_%d", i), Name: "bash", Arguments: `{"command":"ls -la","timeout_ms":10000}`},
		}},
		store.ToolResult{CallID: fmt.Sprintf("call_%d", i), Text: out, Title: "ls -la", ToolKind: "execute",
			RawInput: json.RawMessage(`{"command":"ls -la","timeout_ms":10000}`), Status: "completed",
			Content: json.RawMessage(`[{"type":"content","content":{"type":"text","text":` + strings.TrimSpace(mustJSON(out)) + `}}]`)},
		store.Assistant{MessageID: fmt.Sprintf("m%db", i), Text: "The largest file is go.sum."},
		store.Usage{Used: 4000 + int64(i), Size: 128000},
	} {
		if _, err := sess.Append(p); err != nil {
			b.Fatal(err)
		}
	}
}

func mustJSON(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// BenchmarkTurn is the cost of persistence on one one-tool-call prompt:
// five appends and the Sync at its end (fsync included). Reports the
// median as well as the mean, since fsync has a long tail.
func BenchmarkTurn(b *testing.B) {
	st := benchStore(b)
	sess, err := st.Create("bench", "/work")
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		turn(b, sess, i)
		if err := sess.Sync(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	reportCPU(b, cpu)
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "median-µs")
}

// BenchmarkLoad500 opens (locks, reads, parses) a session of 500 entries:
// 100 turns of five.
func BenchmarkLoad500(b *testing.B) {
	st := benchStore(b)
	sess, err := st.Create("bench", "/work")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		turn(b, sess, i)
	}
	if err := sess.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		sess, err := st.Open("bench")
		if err != nil {
			b.Fatal(err)
		}
		if n := len(sess.Entries()); n != 500 {
			b.Fatalf("%d entries", n)
		}
		sess.Close()
	}
	reportCPU(b, cpu)
}

// BenchmarkList1000 lists the first page of 1,000 stored sessions, each
// with a title and a few turns.
func BenchmarkList1000(b *testing.B) {
	st := benchStore(b)
	for i := range 1000 {
		sess, err := st.Create(fmt.Sprintf("session-%04d", i), fmt.Sprintf("/work/p%d", i%10))
		if err != nil {
			b.Fatal(err)
		}
		sess.Append(store.Title{Title: fmt.Sprintf("session number %d", i)})
		turn(b, sess, i)
		if err := sess.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		page, err := st.List(store.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Sessions) != store.PageSize || page.NextCursor == "" {
			b.Fatalf("page of %d", len(page.Sessions))
		}
	}
	reportCPU(b, cpu)
}
