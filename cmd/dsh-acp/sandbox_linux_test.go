package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// The sandbox through the real binary: the Auto in sandbox mode confines
// every command, Full access does not, and what is the agent's stays out of
// reach. Linux only: Landlock and namespaces are what is tested.

var probed = sync.OnceValue(func() sandbox.Availability { return sandbox.Probe(nil) })

func needSandbox(t *testing.T) sandbox.Availability {
	t.Helper()
	a := probed()
	if sandbox.Require(a) != nil {
		t.Skip("no Landlock on this kernel")
	}
	return a
}

// sandboxAgent is the binary with --sandbox on, its own state dir, log file
// and TMPDIR, and a per-run marker in its environment.
type sandboxAgent struct {
	*agentProc
	stateDir, tmp string
}

// logFile and stateDir may be empty (fresh ones).
func startSandboxAgent(t *testing.T, script, logFile, stateDir string, extra ...string) *sandboxAgent {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	marker := "DSH_ORPHAN_TEST=" + hex.EncodeToString(b)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if logFile == "" {
		logFile = filepath.Join(dir, "log")
	}
	if stateDir == "" {
		stateDir = filepath.Join(dir, "state")
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--script", script, "--log-file", logFile, "--log-level", "debug", "--state-dir", stateDir, "--sandbox", "on"}, extra...)
	p := startProcEnv(t, []string{marker, "TMPDIR=" + tmp}, args...)
	ap := &agentProc{proc: p, marker: marker, logFile: logFile}
	t.Cleanup(func() {
		for _, pid := range ap.marked() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if ap.watchdog > 0 {
			_ = syscall.Kill(ap.watchdog, syscall.SIGKILL)
		}
	})
	return &sandboxAgent{agentProc: ap, stateDir: stateDir, tmp: tmp}
}

// toolResult is one finished tool call as the editor sees it.
type toolResult struct {
	text string
	raw  map[string]any
}

func (r toolResult) exit() float64 {
	c, _ := r.raw["exitCode"].(float64)
	return c
}

// prompt runs one prompt to its end and returns its tool results in order.
func (p *sandboxAgent) prompt(ctx context.Context, sid, text string) []toolResult {
	p.t.Helper()
	id := p.send("session/prompt", promptParams(sid, text))
	var out []toolResult
	for {
		m := p.await(ctx, "prompt "+text, func(map[string]any) bool { return true })
		if f, ok := m["id"].(float64); ok && int(f) == id && m["method"] == nil {
			if e, ok := m["error"]; ok {
				p.t.Fatalf("prompt failed: %v", e)
			}
			return out
		}
		params, _ := m["params"].(map[string]any)
		up, _ := params["update"].(map[string]any)
		if up["sessionUpdate"] != "tool_call_update" || (up["status"] != "completed" && up["status"] != "failed") {
			continue
		}
		var r toolResult
		r.raw, _ = up["rawOutput"].(map[string]any)
		content, _ := up["content"].([]any)
		for _, c := range content {
			inner, _ := c.(map[string]any)["content"].(map[string]any)
			// A long command's own block (its whole text, above the
			// result) is not what it printed.
			if s, ok := inner["text"].(string); ok && !strings.HasPrefix(s, "```sh\n") {
				r.text += s + "\n"
			}
		}
		out = append(out, r)
	}
}

// bashTurn is a scripted turn of tag calling bash once per command.
func bashTurn(tag string, commands ...string) string {
	var calls []any
	for _, c := range commands {
		calls = append(calls, map[string]any{"name": "bash", "arguments": map[string]any{"command": c, "description": "Run it"}})
	}
	b, _ := json.Marshal(map[string]any{"tag": tag, "tool_calls": calls})
	return string(b) + "\n" + fmt.Sprintf(`{"tag":%q,"text":"done"}`, tag)
}

// listener accepts on 127.0.0.1 until the test ends.
func listener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().(*net.TCPAddr).AddrPort().String()
}

func TestSandboxConfinesCommands(t *testing.T) {
	t.Parallel()
	avail := needSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "readable"), []byte("outside text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := listener(t)
	host, port, _ := strings.Cut(addr, ":")
	connect := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s && echo connected", host, port)
	const spill = "seq 1 20000"
	// A file the test writes between turns names a path to try.
	named := func(name string) string { return `cat "$(cat ` + filepath.Join(outside, name) + `)" | wc -l` }
	dir := t.TempDir()
	logFile, stateDir := filepath.Join(dir, "log"), filepath.Join(dir, "state")
	script := writeScript(t,
		bashTurn("B", spill, connect),
		bashTurn("A",
			"echo hi > inside && cat inside",                            // 0: the cwd is writable
			"echo x > "+outside+"/f",                                    // 1: outside is not
			`echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "$TMPDIR"`, // 2: the temp dir is
			"cat "+outside+"/readable",                                  // 3: reading works
			connect,                                                     // 4: no network
			// 5: the policy channel is closed in every process the
			// command can see.
			`for f in /dev/fd/3 /proc/$PPID/fd/3 /proc/1/fd/3; do if cat "$f" >/dev/null 2>&1; then echo "READ $f"; fi; done; echo end`,
			spill,          // 6: a spill file of A's own
			named("other"), // 7: B's spill file
			// 8: the session store. (Names in a denied tree can be
			// listed: Landlock's ReadDir on the way to it is inherited.)
			"find "+stateDir+" -type f -exec cat {} +",
			"cat "+logFile, // 9: the agent's log
		),
		bashTurn("A", named("own")),
	)
	p := startSandboxAgent(t, script, logFile, stateDir)
	b := p.newSession(ctx, "auto")
	a := p.newSession(ctx, "sandbox")

	rb := p.prompt(ctx, b, "[script:B] go")
	if len(rb) != 2 {
		t.Fatalf("%d results in B, want 2", len(rb))
	}
	if _, ok := rb[0].raw["sandboxed"]; ok {
		t.Errorf("Full access call says sandboxed: %v", rb[0].raw)
	}
	writeName(t, outside, "other", spillPath(t, rb[0]))
	if r := rb[1]; r.exit() != 0 || !strings.Contains(r.text, "connected") {
		t.Errorf("connect with full access: %q %v", r.text, r.raw)
	}

	ra := p.prompt(ctx, a, "[script:A] go")
	if len(ra) != 10 {
		t.Fatalf("%d results in A, want 10: %v", len(ra), ra)
	}
	for i, r := range ra {
		if r.raw["sandboxed"] != true {
			t.Errorf("A call %d: rawOutput %v lacks sandboxed: true", i, r.raw)
		}
	}
	if r := ra[0]; r.exit() != 0 || !strings.Contains(r.text, "hi") {
		t.Errorf("write in cwd: %q %v", r.text, r.raw)
	}
	if r := ra[1]; r.exit() != 1 || !strings.Contains(r.text, "Permission denied") || !strings.Contains(r.text, "[exit code: 1]") {
		t.Errorf("write outside: %q %v", r.text, r.raw)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("the write outside happened")
	}
	tmpdir := ""
	if r := ra[2]; r.exit() != 0 {
		t.Errorf("temp dir: %q %v", r.text, r.raw)
	} else {
		for _, line := range strings.Split(r.text, "\n") {
			if strings.HasPrefix(line, p.tmp+"/") {
				tmpdir = line
			}
		}
		if tmpdir == "" {
			t.Errorf("TMPDIR not a private dir under %s: %q", p.tmp, r.text)
		}
	}
	if r := ra[3]; r.exit() != 0 || !strings.Contains(r.text, "outside text") {
		t.Errorf("read outside: %q %v", r.text, r.raw)
	}
	if r := ra[4]; avail.NetworkDenial() != "none" && (r.exit() == 0 || strings.Contains(r.text, "connected")) {
		t.Errorf("connect inside the sandbox: %q %v", r.text, r.raw)
	}
	if r := ra[5]; r.exit() != 0 || strings.Contains(r.text, "READ") || !strings.Contains(r.text, "end") {
		t.Errorf("policy channel reachable: %q %v", r.text, r.raw)
	}
	writeName(t, outside, "own", spillPath(t, ra[6]))
	if r := ra[7]; !hidden(r.text) || strings.Contains(r.text, "20000") {
		t.Errorf("another session's spill file: %q %v", r.text, r.raw)
	}
	for i, what := range map[int]string{8: "store", 9: "log"} {
		if r := ra[i]; r.exit() == 0 || !strings.Contains(r.text, "Permission denied") {
			t.Errorf("the agent's %s: %q %v", what, r.text, r.raw)
		}
	}
	if r := p.prompt(ctx, a, "[script:A] again"); len(r) != 1 || r[0].exit() != 0 || !strings.Contains(r[0].text, "20000") {
		t.Errorf("own spill file: %v", r)
	}

	// Closing A removes its temporary directory.
	p.call(ctx, "session/close", map[string]any{"sessionId": a})
	if _, err := os.Stat(tmpdir); tmpdir != "" && !os.IsNotExist(err) {
		t.Errorf("temp dir %s still there after close (%v)", tmpdir, err)
	}
}

// An MCP tool's result spills like a command's output, and like it is the
// session's: a confined command of the session can read the spill file
// (the tool text tells the model to), one of another session cannot, and
// the file goes when the session closes. The server is this test binary,
// over stdio.
func TestSandboxMCPSpillFiles(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	named := `cat "$(cat ` + filepath.Join(outside, "path") + `)" | wc -l`
	script := writeScript(t,
		`{"tag":"A","tool_calls":[{"name":"mcp__big__big","arguments":{}}]}`, `{"tag":"A","text":"spilled"}`,
		bashTurn("B", named),
		bashTurn("A", named),
	)
	// Auto in sandbox asks for MCP calls as Ask does: the rule answers.
	p := startSandboxAgent(t, script, "", "", "--allow", "mcp:big/big")
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	sess := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{
		"name": "big", "command": self, "args": []string{},
		"env": []any{map[string]any{"name": mcpServerEnv, "value": "serve"}},
	}}})
	a := sess["sessionId"].(string)
	p.call(ctx, "session/set_mode", map[string]any{"sessionId": a, "modeId": "sandbox"})
	b := p.newSession(ctx, "sandbox")
	p.waitLog(ctx, "mcp tools listed")

	ra := p.prompt(ctx, a, "[script:A] call it")
	if len(ra) != 1 {
		t.Fatalf("%d results in A, want 1: %v", len(ra), ra)
	}
	m := regexp.MustCompile(`full output: (\S+)\]`).FindStringSubmatch(ra[0].text)
	if m == nil {
		t.Fatalf("no spill file named in the MCP result: %q", ra[0].text)
	}
	path := m[1]
	if b, err := os.ReadFile(path); err != nil || strings.Count(string(b), "\n") != mcpBigLines {
		t.Fatalf("spill file %s: %d lines, %v", path, strings.Count(string(b), "\n"), err)
	}
	writeName(t, outside, "path", path)

	if r := p.prompt(ctx, b, "[script:B] read A's"); len(r) != 1 || !hidden(r[0].text) || strings.Contains(r[0].text, fmt.Sprint(mcpBigLines)) {
		t.Errorf("another session's MCP spill file: %v", r)
	}
	if r := p.prompt(ctx, a, "[script:A] read own"); len(r) != 1 || r[0].exit() != 0 || !strings.Contains(r[0].text, fmt.Sprint(mcpBigLines)) {
		t.Errorf("own MCP spill file: %v", r)
	}

	p.call(ctx, "session/close", map[string]any{"sessionId": a})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("MCP spill file %s still there after close (%v)", path, err)
	}
}

// waitLog returns once the agent's log has a line with text (the one place
// that says when a session's MCP servers have listed their tools).
func (p *agentProc) waitLog(ctx context.Context, text string) {
	p.t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, _ := os.ReadFile(p.logFile); strings.Contains(string(b), text) {
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("no %q in the log: %v", text, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func writeName(t *testing.T, dir, name, path string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(path), 0o644); err != nil {
		t.Fatal(err)
	}
}

// spillPath is the one spill file a truncated result names.
func spillPath(t *testing.T, r toolResult) string {
	t.Helper()
	paths, _ := r.raw["spillPaths"].([]any)
	if len(paths) == 0 {
		t.Fatalf("no spill file in %v", r.raw)
	}
	return paths[0].(string)
}

// A setsid daemon a sandboxed command starts is gone after bash_kill,
// session/close and a SIGKILL of the agent: the PID namespace ends with
// the command. (Landlock alone cannot promise it; skipped without one.)
func TestSandboxDaemonDoesNotSurvive(t *testing.T) {
	t.Parallel()
	if a := needSandbox(t); !a.PIDNS {
		t.Skip("no PID namespace here")
	}
	const daemon = "setsid sleep 1000 </dev/null >/dev/null 2>&1 & sleep 1000"
	for _, way := range []string{"bash_kill", "session/close", "SIGKILL"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			script := writeScript(t, taggedCall("", daemon, true, 0), `{"text":"started"}`,
				`{"tool_calls":[{"name":"bash_kill","arguments":{"task_id":"bash-1"}}]}`, `{"text":"killed"}`)
			p := startSandboxAgent(t, script, "", "")
			sid := p.newSession(ctx, "sandbox")
			p.call(ctx, "session/prompt", promptParams(sid, "go"))
			// Two sleeps: the daemon and the command's own.
			p.waitMarkedN(ctx, isSleep1000, 2)
			ended := time.Now()
			switch way {
			case "bash_kill":
				p.call(ctx, "session/prompt", promptParams(sid, "kill it"))
			case "session/close":
				p.call(ctx, "session/close", map[string]any{"sessionId": sid})
			case "SIGKILL":
				_ = p.cmd.Process.Kill()
				p.waitExit(ctx, true)
			}
			p.expectNoSurvivors(ctx, ended)
		})
	}
}

// Asked for and missing, the sandbox stops the start: --sandbox on and
// --default-mode sandbox each exit with an error naming it; by default the
// agent starts and does not offer the mode.
func TestSandboxRefusedWhenMissing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{{"--sandbox", "on"}, {"--default-mode", "sandbox"}} {
		cmd := exec.CommandContext(ctx, binPath, append([]string{"--no-persist"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), sandbox.SimulateEnv + "=nolandlock"}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err == nil || (code != 1 && code != 2) || !strings.Contains(stderr.String(), "sandbox") || !strings.Contains(stderr.String(), "Landlock") {
			t.Errorf("%v: exit %d (%v), stderr %q", args, code, err, stderr.String())
		}
	}
	p := startProcEnv(t, []string{sandbox.SimulateEnv + "=nolandlock"}, "--no-persist")
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	sess := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	if ids := modeIDs(sess); strings.Join(ids, ",") != "ask,auto" {
		t.Errorf("modes without a sandbox: %v", ids)
	}
	if m := p.callErr(ctx, "session/set_mode", map[string]any{"sessionId": sess["sessionId"], "modeId": "sandbox"}); m == nil {
		t.Error("set_mode sandbox accepted without a sandbox")
	}
}

// The three modes through set_mode and the mode config option, each
// announced to the other; a new session starts in --default-mode.
func TestSandboxModes(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := startSandboxAgent(t, writeScript(t, `{"text":"hi"}`), "", "", "--default-mode", "sandbox")
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	sess := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	if ids := modeIDs(sess); strings.Join(ids, ",") != "ask,sandbox,auto" {
		t.Errorf("modes: %v", ids)
	}
	if cur := sess["modes"].(map[string]any)["currentModeId"]; cur != "sandbox" {
		t.Errorf("new session in %v, want sandbox", cur)
	}
	sid := sess["sessionId"].(string)
	p.send("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto"})
	up := p.await(ctx, "config_option_update", func(m map[string]any) bool {
		params, _ := m["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		return u["sessionUpdate"] == "config_option_update"
	})
	opts := up["params"].(map[string]any)["update"].(map[string]any)["configOptions"].([]any)
	if v := opts[0].(map[string]any)["currentValue"]; v != "auto" {
		t.Errorf("mode option after set_mode auto: %v", v)
	}
	p.send("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "sandbox"})
	p.await(ctx, "current_mode_update", func(m map[string]any) bool {
		params, _ := m["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		return u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "sandbox"
	})
}

func modeIDs(sess map[string]any) []string {
	var ids []string
	modes, _ := sess["modes"].(map[string]any)
	avail, _ := modes["availableModes"].([]any)
	for _, m := range avail {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return ids
}

// callErr sends a request and returns its error, nil if it succeeded.
func (p *proc) callErr(ctx context.Context, method string, params any) any {
	p.t.Helper()
	id := p.send(method, params)
	m := p.await(ctx, method+" response", func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	return m["error"]
}

// hidden reports whether a command's text says the path it read is out of
// reach: refused by Landlock, or (with namespaces) covered by a mount.
func hidden(text string) bool {
	return strings.Contains(text, "Permission denied") || strings.Contains(text, "No such file")
}
