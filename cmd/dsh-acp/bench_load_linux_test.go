package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// BenchmarkLoadLargeSession is session/load of a 300 MB session over the
// real binary's stdio, its replay read to the end: the agent's peak RSS
// over the log's size (target: at most 2).
//
//	go test -run '^$' -bench LoadLargeSession -benchtime 2x ./cmd/dsh-acp
func BenchmarkLoadLargeSession(b *testing.B) {
	const size = 300 << 20
	dir := b.TempDir()
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	cwd := b.TempDir()
	s, err := st.Create("large", cwd)
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("drwxr-xr-x  2 user user  4096 Jan  1 00:00 some-directory-name\n", 1000)
	log := dir + "/sessions/large.jsonl"
	for i := 0; ; i++ {
		if fi, err := os.Stat(log); err != nil {
			b.Fatal(err)
		} else if fi.Size() >= size {
			break
		}
		id := fmt.Sprintf("call_%d", i)
		for _, p := range []store.Payload{
			store.Prompt{Text: "list it again"},
			store.Assistant{Text: "listing", ToolCalls: []store.ToolCall{{ID: id, Name: "bash", Arguments: `{"command":"ls -la"}`}}},
			store.ToolResult{CallID: id, Text: out, Title: "ls -la", ToolKind: "execute", Status: "completed"},
		} {
			if _, err := s.Append(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(log)
	if err != nil {
		b.Fatal(err)
	}
	var peak int64
	var wall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := exec.Command(binPath, "--script", benchScript(b, 0), "--state-dir", dir, "--context-window", "100000000")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
		in, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"large","cwd":%q,"mcpServers":[]}}`+"\n", cwd)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				b.Fatalf("read: %v", err)
			}
			if strings.HasPrefix(string(line), `{"id":2,`) || strings.Contains(string(line[:min(len(line), 40)]), `"id":2`) {
				if strings.Contains(string(line), `"error"`) {
					b.Fatalf("load: %s", line)
				}
				break
			}
		}
		in.Close()
		io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		peak = max(peak, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10)
	}
	b.StopTimer()
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(peak)/float64(fi.Size()), "RSS/file")
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/load")
}
