package main

import (
	"context"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"testing"
	"time"
)

// A stdio MCP server is a service of its session in the executor: a
// `setsid` child it starts, which left its process group and session, is
// ended with it — when the session closes (the executor finds it by the
// service's own marker) and when the agent is SIGKILLed (the watchdog finds
// it by the run marker). The server is a real one (this test binary
// serving MCP); the child carries the test's marker too, through the
// editor's env for the server, so the test can find it.
func TestMCPServerSetsidChildEndsWithIt(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, way := range []string{"session/close", "SIGKILL"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p := startAgent(t, writeScript(t, `{"text":"ok"}`))
			p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
			name, value, _ := strings.Cut(p.marker, "=")
			sess := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{map[string]any{
				"name": "forks", "command": self, "args": []string{},
				"env": []any{
					map[string]any{"name": mcpServerEnv, "value": "setsid"},
					map[string]any{"name": name, "value": value},
				},
			}}})
			sid := sess["sessionId"].(string)
			p.waitMarked(ctx, isSleep1000)
			var daemon int
			for _, pid := range p.marked() {
				if isSleep1000(cmdline(pid)) {
					daemon = pid
				}
			}
			// It did leave: neither the server's group nor its session
			// reaches it.
			dsid, _ := unix.Getsid(daemon)
			servers := slices.DeleteFunc(p.marked(), func(pid int) bool { return pid == daemon })
			for _, s := range servers {
				if ssid, _ := unix.Getsid(s); ssid == dsid {
					t.Fatalf("the daemon %d shares session %d with %d %q", daemon, dsid, s, cmdline(s))
				}
			}
			ended := time.Now()
			switch way {
			case "session/close":
				p.call(ctx, "session/close", map[string]any{"sessionId": sid})
			case "SIGKILL":
				_ = p.cmd.Process.Kill()
				p.waitExit(ctx, true)
			}
			p.expectNoSurvivors(ctx, ended)
			if live(daemon) {
				t.Errorf("the server's setsid child %d survives %s", daemon, way)
			}
		})
	}
}
