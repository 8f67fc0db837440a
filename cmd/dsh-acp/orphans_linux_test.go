package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// The commands of the orphan matrix. Each one leaves a `sleep 1000` running
// by another route out of the shell's reach; the test waits for that sleep
// before it ends the agent.
var orphanCommands = []struct {
	name, command string
	background    bool
}{
	{"foreground sleep", "sleep 1000", false},
	{"background sleep", "sleep 1000", true},
	{"ignores SIGTERM", "trap '' TERM; while :; do sleep 1000; done", true},
	// The shell stays: once it has exited, what it left in its group is a
	// leftover the executor ends within LeftoverGrace (300 ms; see
	// executor's TestRunLeftoverBackground), not something that lives until
	// the agent ends — a test waiting for it to show can miss it on a
	// loaded machine, and then waited its whole timeout.
	{"grandchild", "(sleep 1000 &); sleep 999", true},
	{"nohup", "nohup sleep 1000 >/dev/null 2>&1 & wait", true},
	{"coreutils timeout", "timeout 1000 sleep 1000", true},
	{"job control", "set -m; sleep 1000 & wait", true},
	{"closes stdout and stderr", "exec >&- 2>&-; sleep 1000", true},
}

// orphanEndings are the ways an editor ends the agent.
var orphanEndings = []struct {
	name string
	end  func(p *agentProc)
}{
	{"stdin EOF", func(p *agentProc) { p.stdin.Close() }},
	{"SIGTERM", func(p *agentProc) { _ = p.cmd.Process.Signal(syscall.SIGTERM) }},
	{"SIGINT", func(p *agentProc) { _ = p.cmd.Process.Signal(syscall.SIGINT) }},
	{"SIGKILL", func(p *agentProc) { _ = p.cmd.Process.Kill() }},
}

// Whatever ends the agent, nothing it started survives it by more than the
// kill grace plus a second: no command, no process that left the command's
// group, and not the watchdog either.
func TestNoOrphansMatrix(t *testing.T) {
	t.Parallel()
	for _, end := range orphanEndings {
		for _, c := range orphanCommands {
			t.Run(end.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				p := startAgent(t, scriptCall(t, c.command, c.background))
				sid := p.newSession(ctx, "auto")
				id := p.send("session/prompt", promptParams(sid, "go"))
				if c.background {
					p.awaitResult(ctx, id)
				}
				p.drain()
				p.waitMarked(ctx, isSleep1000)
				ended := time.Now()
				end.end(p)
				p.waitExit(ctx, end.name == "SIGKILL")
				p.expectNoSurvivors(ctx, ended)
			})
		}
	}
}

// Several sessions, each with background tasks and a foreground command
// that ignores SIGTERM: SIGTERM to the agent ends them all within one
// grace, not one per session, and SIGKILL leaves nothing behind either.
func TestNoOrphansManySessions(t *testing.T) {
	t.Parallel()
	for _, end := range orphanEndings[1:] {
		t.Run(end.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const sessions = 8
			var lines []string
			for i := range sessions {
				tag := fmt.Sprintf("S%d", i)
				for _, bg := range []string{"sleep 1000", "timeout 1000 sleep 1000", "set -m; sleep 1000 & wait"} {
					lines = append(lines, taggedCall(tag, bg, true, 0))
				}
				lines = append(lines, taggedCall(tag, "trap '' TERM; sleep 1000", false, 0))
			}
			p := startAgent(t, writeScript(t, lines...))
			for i := range sessions {
				sid := p.newSession(ctx, "auto")
				p.send("session/prompt", promptParams(sid, fmt.Sprintf("[script:S%d] go", i)))
			}
			p.drain()
			p.waitMarkedN(ctx, isSleep1000, sessions*4)
			ended := time.Now()
			end.end(p)
			p.waitExit(ctx, end.name == "SIGKILL")
			if d := time.Since(ended); end.name != "SIGKILL" && d > 5*time.Second {
				t.Errorf("agent took %v to exit with %d sessions; want one grace (3s) in all", d, sessions)
			}
			p.expectNoSurvivors(ctx, ended)
		})
	}
}

// Ending one command — bash_kill, session/close, session/cancel, a
// foreground timeout — ends all of it, what left its group included, while
// the agent goes on.
func TestEndingACommandEndsItsSession(t *testing.T) {
	t.Parallel()
	hard := []string{"timeout 1000 sleep 1000", "set -m; sleep 1000 & wait"}
	ways := []string{"bash_kill", "session/close", "session/cancel", "timeout"}
	for _, way := range ways {
		for _, command := range hard {
			t.Run(way+"/"+command, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				var script, pidFile string
				var job int // the timeout way: the pid of the job the command started
				switch way {
				case "bash_kill":
					script = writeScript(t, taggedCall("", command, true, 0), `{"text":"started"}`,
						`{"tool_calls":[{"name":"bash_kill","arguments":{"task_id":"bash-1"}}]}`, `{"text":"killed"}`)
				case "timeout":
					// The timer ends the command whatever the test does: a test
					// watching /proc for the sleep before it could, on a loaded
					// machine, look only after it was gone, and then wait its
					// whole minute. The command names what it started instead.
					pidFile = filepath.Join(t.TempDir(), "pid")
					started := strings.Replace(command, " & wait", " & echo $! > '"+pidFile+"'; wait", 1)
					if started == command {
						started = command + " & echo $! > '" + pidFile + "'; wait"
					}
					script = writeScript(t, taggedCall("", started, false, 1000), `{"text":"timed out"}`)
				default:
					script = writeScript(t, taggedCall("", command, false, 0))
				}
				p := startAgent(t, script)
				sid := p.newSession(ctx, "auto")
				id := p.send("session/prompt", promptParams(sid, "go"))
				if way == "bash_kill" {
					p.awaitResult(ctx, id)
				}
				if way != "timeout" {
					p.waitMarked(ctx, isSleep1000)
				}
				ended := time.Now()
				switch way {
				case "bash_kill":
					p.call(ctx, "session/prompt", promptParams(sid, "kill it"))
				case "session/close":
					p.call(ctx, "session/close", map[string]any{"sessionId": sid})
				case "session/cancel":
					p.send2("session/cancel", map[string]any{"sessionId": sid})
					p.awaitResult(ctx, id)
				case "timeout":
					p.awaitResult(ctx, id)
					ended = time.Now()
					b, err := os.ReadFile(pidFile)
					if job, _ = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || job <= 0 {
						t.Fatalf("the command did not start its job before its timeout: %q %v", b, err)
					}
				}
				p.expectNoSurvivors(ctx, ended)
				if live(job) {
					t.Errorf("job %d outlived the command's end", job)
				}
				// The agent is still there and answers.
				p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
			})
		}
	}
}

// agentProc is the real binary with a per-run marker in its environment,
// which every command inherits: the survivors are found by it.
type agentProc struct {
	*proc
	marker   string
	logFile  string
	watchdog int
	drained  bool
}

func startAgent(t *testing.T, script string) *agentProc {
	t.Helper()
	return startAgentEnv(t, script, nil)
}

// startAgentEnv is startAgent with extra environment and arguments.
func startAgentEnv(t *testing.T, script string, env []string, args ...string) *agentProc {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	marker := "DSH_ORPHAN_TEST=" + hex.EncodeToString(b)
	logFile := filepath.Join(t.TempDir(), "log")
	p := startProcEnv(t, append([]string{marker}, env...), append([]string{"--script", script, "--log-file", logFile, "--log-level", "debug"}, args...)...)
	ap := &agentProc{proc: p, marker: marker, logFile: logFile}
	t.Cleanup(func() {
		// Whatever the test did, nothing of it may stay.
		for _, pid := range ap.marked() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if ap.watchdog > 0 {
			_ = syscall.Kill(ap.watchdog, syscall.SIGKILL)
		}
	})
	return ap
}

func (p *agentProc) newSession(ctx context.Context, mode string) string {
	p.t.Helper()
	if p.nextID == 0 {
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	}
	sess := p.call(ctx, "session/new", map[string]any{"cwd": p.t.TempDir(), "mcpServers": []any{}})
	sid := sess["sessionId"].(string)
	p.call(ctx, "session/set_mode", map[string]any{"sessionId": sid, "modeId": mode})
	return sid
}

// watchdogPid reads the watchdog's pid from the debug log, waiting for its
// line: the agent logs it once the first group was registered.
func (p *agentProc) watchdogPid() int {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(p.logFile)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "watchdog started" {
				return int(m["pid"].(float64))
			}
		}
		if time.Now().After(deadline) {
			p.t.Errorf("no watchdog in the log:\n%s", b)
			return 0
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// send2 sends a notification (no id).
func (p *agentProc) send2(method string, params any) {
	p.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

func (p *agentProc) awaitResult(ctx context.Context, id int) map[string]any {
	p.t.Helper()
	return p.await(ctx, fmt.Sprintf("answer %d", id), func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
}

// drain reads frames in the background from now on, so the agent never
// blocks on a full stdout while the test waits for processes.
func (p *agentProc) drain() {
	if p.drained {
		return
	}
	p.drained = true
	go func() {
		for range p.lines {
		}
	}()
}

func (p *agentProc) waitExit(ctx context.Context, killed bool) {
	p.t.Helper()
	p.drain()
	select {
	case err := <-p.done:
		if !killed && err != nil {
			p.t.Errorf("agent exit: %v", err)
		}
	case <-ctx.Done():
		p.t.Fatal("agent did not exit")
	}
}

func (p *agentProc) waitMarked(ctx context.Context, match func(cmdline string) bool) {
	p.t.Helper()
	p.waitMarkedN(ctx, match, 1)
}

// waitMarkedN waits until n marked processes satisfy match. Processes
// announce nothing, so it polls.
func (p *agentProc) waitMarkedN(ctx context.Context, match func(string) bool, n int) {
	p.t.Helper()
	for {
		got := 0
		for _, pid := range p.marked() {
			if match(cmdline(pid)) {
				got++
			}
		}
		if got >= n {
			if p.watchdog == 0 {
				// Started with the first registered group, before it ran.
				p.watchdog = p.watchdogPid()
			}
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("only %d of %d marked processes appeared", got, n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// expectNoSurvivors: within the grace plus a second (plus slack for a
// loaded CI machine) of since, no marked process can run and the watchdog
// is gone if the agent is.
func (p *agentProc) expectNoSurvivors(ctx context.Context, since time.Time) {
	p.t.Helper()
	const limit = 3*time.Second + time.Second
	const slack = 2 * time.Second
	for {
		left := p.marked()
		if len(left) == 0 {
			break
		}
		if time.Since(since) > limit+slack || ctx.Err() != nil {
			var desc []string
			for _, pid := range left {
				desc = append(desc, fmt.Sprintf("%d %q", pid, cmdline(pid)))
			}
			p.t.Fatalf("survivors after %v: %s", time.Since(since), strings.Join(desc, ", "))
		}
		time.Sleep(10 * time.Millisecond) // nothing announces their end
	}
	d := time.Since(since)
	if d > limit {
		p.t.Logf("took %v (over the %v goal; machine load?)", d, limit)
	}
	if p.cmd.ProcessState == nil {
		return // the agent runs on; so does its watchdog
	}
	for live(p.watchdog) {
		if time.Since(since) > limit+slack {
			p.t.Fatalf("watchdog %d still running %v after the agent ended", p.watchdog, time.Since(since))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// marked lists the live processes whose environment holds the marker, the
// agent itself excepted.
func (p *agentProc) marked() []int {
	ents, _ := os.ReadDir("/proc")
	want := []byte(p.marker + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == p.cmd.Process.Pid || !live(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			out = append(out, pid)
		}
	}
	return out
}

// live: pid runs (a zombie does not).
func live(pid int) bool { return pid > 0 && !testutil.Gone(pid) }

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
}

func isSleep1000(cmd string) bool { return cmd == "sleep 1000" }

func scriptCall(t *testing.T, command string, background bool) string {
	return writeScript(t, taggedCall("", command, background, 0), `{"text":"done"}`)
}

// taggedCall is one scripted model turn calling bash.
func taggedCall(tag, command string, background bool, timeoutMs int) string {
	args := map[string]any{"command": command, "description": "Run it"}
	if background {
		args["run_in_background"] = true
	}
	if timeoutMs > 0 {
		args["timeoutMs"] = timeoutMs
	}
	b, _ := json.Marshal(map[string]any{"tag": tag, "tool_calls": []any{map[string]any{"name": "bash", "arguments": args}}})
	return string(b)
}

// startProcEnv is startProc with extra environment.
func startProcEnv(t *testing.T, extra []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, extra...)
	return startCmd(t, cmd)
}

// A session's stdio MCP server is a process of that session: however the
// agent ends, SIGKILL included, the server does not outlive it (the
// watchdog ends it like a command). The "server" here never answers MCP's
// initialize, so it is still starting when the agent ends.
func TestNoOrphansMCPServer(t *testing.T) {
	t.Parallel()
	for _, end := range orphanEndings {
		t.Run(end.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p := startAgent(t, writeScript(t, `{"text":"ok"}`))
			p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
			name, value, _ := strings.Cut(p.marker, "=")
			p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{
				"name": "stuck", "command": "sleep", "args": []string{"1000"},
				// The editor's env for the server: the marker finds it.
				"env": []any{map[string]any{"name": name, "value": value}},
			}}})
			p.drain()
			p.waitMarked(ctx, isSleep1000)
			ended := time.Now()
			end.end(p)
			p.waitExit(ctx, end.name == "SIGKILL")
			p.expectNoSurvivors(ctx, ended)
		})
	}
}
