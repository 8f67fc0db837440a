package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/execclient"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// The benchmarks of a newcomer's experience: start-up, session/new, a prompt
// with one tool call, and idle memory. Run them with
//
//	go test -run '^$' -bench . -benchmem ./cmd/dsh-acp

// BenchmarkStartup measures launching the binary until its initialize answer
// arrives: what an editor waits for before it can show the agent.
// With stored=1000 the state directory holds a thousand sessions: start-up
// reads none of them.
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("stored=%d", n), func(b *testing.B) { benchStartup(b, n) })
	}
	b.Run("sandbox=off", func(b *testing.B) {
		startupFlags = []string{"--sandbox", "off"}
		defer func() { startupFlags = nil }()
		benchStartup(b, 0)
	})
	// The yardstick of issue 9: the SDK's own bare example agent, launched
	// the same way in the same run, until its initialize answer.
	b.Run("sdk-example", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		bin := sdkExample(b)
		var cpu startCPU
		for b.Loop() {
			cmd := exec.Command(bin)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
			p := startCmd(b, cmd)
			p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
			b.StopTimer()
			cpu.add(p.cmd.Process.Pid)
			p.stdin.Close()
			for range p.lines {
			}
			<-p.done
			b.StartTimer()
		}
		cpu.report(b)
	})
}

// startCPU adds up the CPU time of each start until its initialize answer
// (Linux), reported beside the wall time as cpu-ms/op.
type startCPU struct {
	sum time.Duration
	n   int
	ok  bool
}

func (c *startCPU) add(pid int) {
	if d, ok := processCPU(pid); ok {
		c.sum += d
		c.n++
		c.ok = true
	}
}

func (c *startCPU) report(b *testing.B) {
	if c.ok && c.n > 0 {
		b.ReportMetric(float64(c.sum.Microseconds())/1000/float64(c.n), "cpu-ms/op")
	}
}

func benchStartup(b *testing.B, stored int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script := benchScript(b, 0)
	dir := b.TempDir()
	fillStore(b, dir, stored)
	var cpu startCPU
	for b.Loop() {
		p := startProc(b, append([]string{"--script", script, "--state-dir", dir}, startupFlags...)...)
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
		b.StopTimer()
		cpu.add(p.cmd.Process.Pid)
		p.stdin.Close()
		for range p.lines {
		}
		<-p.done
		b.StartTimer()
	}
	cpu.report(b)
}

// inProcess is the whole agent served over pipes to an SDK client in the
// same process, as the headless runner does.
type inProcess struct {
	conn *acpsdk.ClientSideConnection
	stop func()
}

func startInProcess(b *testing.B, script string, persist bool, stateDir ...string) *inProcess {
	b.Helper()
	cfg := &config{script: script, maxRequests: 100, timeout: 2 * time.Minute, maxTimeout: 10 * time.Minute, logLevel: "error",
		stateDir: b.TempDir(), noPersist: !persist}
	// The agent's own files (a stored key, the user's AGENTS.md) are looked
	// up in a home of the benchmark's, never the real one.
	home := b.TempDir()
	cfg.getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	if len(stateDir) > 0 {
		cfg.stateDir = stateDir[0]
	}
	a, err := newApp(cfg, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.agent.Serve(context.Background(), toAgentR, toClientW)
		toClientW.Close()
	}()
	conn := acpsdk.NewClientSideConnection(execclient.Client(execclient.Options{Stdout: io.Discard, Stderr: io.Discard, Yes: true}), toAgentW, toClientR)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		b.Fatal(err)
	}
	return &inProcess{conn: conn, stop: func() {
		toAgentW.Close()
		<-served
		_ = a.close()
	}}
}

// BenchmarkNewSession measures session/new from a client over pipes.
func BenchmarkNewSession(b *testing.B) {
	ip := startInProcess(b, benchScript(b, 0), true)
	defer ip.stop()
	dir := b.TempDir()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ip.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPromptOneToolCall measures a whole prompt whose scripted model
// asks for one command (`true`) and then answers: two model turns, one
// process, and every session/update, over pipes; stored (the default) and
// with --no-persist, for the cost of persistence (an fsync per turn).
func BenchmarkPromptOneToolCall(b *testing.B) {
	for _, persist := range []bool{true, false} {
		name := "store"
		if !persist {
			name = "no-persist"
		}
		b.Run(name, func(b *testing.B) { benchPrompt(b, persist) })
	}
}

func benchPrompt(b *testing.B, persist bool) {
	ip := startInProcess(b, benchScript(b, b.N), persist)
	defer ip.stop()
	ctx := context.Background()
	s, err := ip.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: b.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ip.conn.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "auto"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := ip.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("go")}})
		if err != nil {
			b.Fatal(err)
		}
		if resp.StopReason != acpsdk.StopReasonEndTurn {
			b.Fatalf("stop reason %s", resp.StopReason)
		}
	}
}

// sdkExample builds the ACP SDK's bare example agent: the yardstick (the
// floor) of start-up and idle memory.
func sdkExample(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "example-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/coder/acp-go-sdk/example/agent").CombinedOutput(); err != nil {
		b.Fatalf("build the SDK's example agent: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkIdleMemory reports the resident memory of the real binary after
// initialize and N idle sessions, and of which the binary's own pages
// (file-MiB: the code and read-only data its start touched); sdk-example
// is the SDK's bare example agent measured the same way (the floor).
func BenchmarkIdleMemory(b *testing.B) {
	idle := func(b *testing.B, start func() *proc, n int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var rss, file float64
		for b.Loop() {
			p := start()
			p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
			dir := b.TempDir()
			for range n {
				p.call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
			}
			rss, file = statusMiB(b, p.cmd.Process.Pid, "VmRSS:"), statusMiB(b, p.cmd.Process.Pid, "RssFile:")
			p.stdin.Close()
			for range p.lines {
			}
			<-p.done
		}
		b.ReportMetric(rss, "RSS-MiB")
		b.ReportMetric(file, "file-MiB")
	}
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			idle(b, func() *proc { return startProc(b, "--script", benchScript(b, 0)) }, n)
		})
	}
	b.Run("sdk-example", func(b *testing.B) {
		bin := sdkExample(b)
		idle(b, func() *proc {
			cmd := exec.Command(bin)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
			return startCmd(b, cmd)
		}, 1)
	})
}

// statusMiB is a figure of /proc/PID/status, in MiB.
func statusMiB(b *testing.B, pid int, field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// benchScript writes n prompts' worth of turns: a `true` command, then text.
func benchScript(b *testing.B, n int) string {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("# benchmark turns\n")
	for range n {
		sb.WriteString(`{"tool_calls":[{"name":"bash","arguments":{"command":"true","description":"Do nothing"}}]}` + "\n")
		sb.WriteString(`{"text":"done"}` + "\n")
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// fillStore stores n sessions of a few entries each in dir.
func fillStore(b *testing.B, dir string, n int) {
	b.Helper()
	if n == 0 {
		return
	}
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	cwd := b.TempDir()
	for i := range n {
		s, err := st.Create(fmt.Sprintf("bench-%04d", i), cwd)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []store.Payload{store.Prompt{Text: "hello"}, store.Title{Title: "hello"}, store.Assistant{Text: "hi"}} {
			if _, err := s.Append(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListSessions measures session/list (a first page of 50) over
// 1,000 stored sessions, over pipes.
func BenchmarkListSessions(b *testing.B) {
	dir := b.TempDir()
	fillStore(b, dir, 1000)
	ip := startInProcess(b, benchScript(b, 0), true, dir)
	defer ip.stop()
	ctx := context.Background()
	for b.Loop() {
		resp, err := ip.conn.ListSessions(ctx, acpsdk.ListSessionsRequest{})
		if err != nil || len(resp.Sessions) != 50 {
			b.Fatalf("list: %d sessions, %v", len(resp.Sessions), err)
		}
	}
}

// BenchmarkLoadSession measures session/load of a session of 500 entries
// (the replay included, to a client that discards it), then its close.
func BenchmarkLoadSession(b *testing.B) {
	dir := b.TempDir()
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	cwd := b.TempDir()
	s, err := st.Create("bench-load", cwd)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 500; i += 5 {
		id := fmt.Sprintf("call_%d", i)
		for _, p := range []store.Payload{
			store.Prompt{Text: "run the tests please"},
			store.Assistant{Reasoning: "Run them.", ToolCalls: []store.ToolCall{{ID: id, Name: "bash", Arguments: `{"command":"go test ./...","description":"Run the tests"}`}}},
			store.ToolResult{CallID: id, Text: strings.Repeat("ok  \tpkg\t0.1s\n", 20), Title: "go test ./...", ToolKind: "execute", Status: "completed"},
			store.Assistant{Text: "All tests pass."},
			store.Usage{Used: 1000, Size: 64000},
		} {
			if _, err := s.Append(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	ip := startInProcess(b, benchScript(b, 0), true, dir)
	defer ip.stop()
	ctx := context.Background()
	for b.Loop() {
		if _, err := ip.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: "bench-load", Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
			b.Fatal(err)
		}
		if _, err := ip.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: "bench-load"}); err != nil {
			b.Fatal(err)
		}
	}
}

var startupFlags []string
