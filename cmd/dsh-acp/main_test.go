package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// binPath is the dsh-acp binary built once for the tests that need a real
// process (signals, stdin EOF, start-up benchmarks).
var binPath string

func TestMain(m *testing.M) {
	if mode := os.Getenv(mcpServerEnv); mode != "" {
		os.Exit(mcpServerMain(mode))
	}
	// The in-process app probes the sandbox by re-executing this binary.
	sandbox.HelperMain(sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	dir, err := os.MkdirTemp("", "dsh-acp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "dsh-acp")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build dsh-acp:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		// goleak.VerifyTestMain would call os.Exit itself; run it inline.
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}
	}()
	os.Exit(code)
}

// proc is the real binary under test, spoken to with hand-written JSON-RPC
// lines so these tests depend on no codec of ours.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	done   chan error
	nextID int
}

func startProc(t testing.TB, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return startCmd(t, cmd)
}

func startCmd(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 256), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			p.lines <- m
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range p.lines {
		}
	})
	return p
}

func (p *proc) send(method string, params any) int {
	p.t.Helper()
	p.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.nextID, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write %s: %v", method, err)
	}
	return p.nextID
}

// await reads frames until one satisfies match; it answers permission
// requests with allow_once on the way.
func (p *proc) await(ctx context.Context, what string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("stdout closed while waiting for %s", what)
			}
			if _, isUnparsable := m["unparsable"]; isUnparsable {
				p.t.Fatalf("non-JSON on stdout: %q", m["unparsable"])
			}
			if match(m) {
				return m
			}
		case <-ctx.Done():
			p.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (p *proc) call(ctx context.Context, method string, params any) map[string]any {
	p.t.Helper()
	id := p.send(method, params)
	m := p.await(ctx, method+" response", func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	if e, ok := m["error"]; ok {
		p.t.Fatalf("%s failed: %v", method, e)
	}
	return m["result"].(map[string]any)
}

func writeScript(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShutdownLeavesNoProcess: stdin EOF, SIGTERM and SIGINT each end the
// program with exit 0 and take every process group it started with it — a
// background task and the grandchild it spawned.
func TestShutdownLeavesNoProcess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		stop func(p *proc)
	}{
		{"stdin closed", func(p *proc) { p.stdin.Close() }},
		{"SIGTERM", func(p *proc) { _ = p.cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(p *proc) { _ = p.cmd.Process.Signal(syscall.SIGINT) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			cmd := fmt.Sprintf("sleep 300 & echo $$ $! > %s; wait", pidFile)
			script := writeScript(t,
				fmt.Sprintf(`{"tool_calls":[{"name":"bash","arguments":{"command":%q,"description":"Start a long job","run_in_background":true}}]}`, cmd),
				`{"text":"started"}`)
			p := startProc(t, "--script", script)
			p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
			sess := p.call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
			sid := sess["sessionId"].(string)
			p.call(ctx, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto"})
			res := p.call(ctx, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "start it"}}})
			if res["stopReason"] != "end_turn" {
				t.Fatalf("stopReason = %v", res["stopReason"])
			}
			fields := strings.Fields(testutil.WaitFile(t, ctx, pidFile))
			if len(fields) != 2 {
				t.Fatalf("pid file = %q", fields)
			}
			var pids []int
			for _, f := range fields {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, n)
			}
			for _, pid := range pids {
				if testutil.Gone(pid) {
					t.Fatalf("pid %d not running before shutdown", pid)
				}
			}

			tc.stop(p)
			for range p.lines {
			}
			select {
			case err := <-p.done:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("exit: %v", err)
				} else if err != nil {
					t.Fatalf("wait: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("dsh-acp did not exit")
			}
			for _, pid := range pids {
				// The binary waited for every group before exiting, but the
				// background job's sleep was reparented: its zombie may
				// linger until init reaps it, which WaitGone allows.
				testutil.WaitGone(t, ctx, pid)
			}
		})
	}
}

// TestRequestThenEOFIsAnswered: a client that writes requests and closes
// stdin at once still gets every answer before the program exits.
func TestRequestThenEOFIsAnswered(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir) + "\n"
	for i := range 10 {
		cmd := exec.CommandContext(ctx, binPath, "--script", writeScript(t, `{"text":"hi"}`))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if n := strings.Count(string(out), `"result"`); n != 2 {
			t.Fatalf("run %d: %d answers, want 2:\n%s", i, n, out)
		}
	}
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// run is the program as tests drive it: not the process itself (no
// watchdog, no exit on a second Ctrl-C).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return program{}.run(ctx, args, stdin, stdout, stderr, getenv)
}
