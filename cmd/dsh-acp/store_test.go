package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Two dsh-acp processes on one state directory (two editor windows): a
// session is live in one of them at a time. The other lists it, but loading
// it is a clear error until the first process lets go of it; then it loads
// with its conversation.
func TestTwoProcessesOneStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := t.TempDir()
	script := writeScript(t, `{"text":"noted"}`)
	start := func() *proc {
		cmd := exec.Command(binPath, "--script", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state}
		p := startCmd(t, cmd)
		p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
		return p
	}
	cwd := t.TempDir()

	first := start()
	sid := first.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["sessionId"].(string)
	first.call(ctx, "session/prompt", promptParams(sid, "remember the word teal"))

	second := start()
	list := second.call(ctx, "session/list", map[string]any{})
	if !strings.Contains(fmt.Sprint(list["sessions"]), sid) {
		t.Fatalf("the second process does not list %s: %v", sid, list)
	}
	id := second.send("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
	reply := second.await(ctx, "load refused", func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	e, ok := reply["error"].(map[string]any)
	if !ok || !strings.Contains(fmt.Sprint(e["message"]), "live in another dsh-acp process") {
		t.Fatalf("load of a session live elsewhere answered %v, want an error saying so", reply)
	}
	// One sentence, said once, with a code a client can act on: invalid
	// params (this session cannot be had here now), not an internal error;
	// data names the session. session/resume answers the same.
	want := "session " + sid + " is live in another dsh-acp process (another editor window?); close it there first"
	for _, method := range []string{"session/load", "session/resume"} {
		e, _ := second.errorOf(ctx, method, map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
		data, _ := e["data"].(map[string]any)
		if e["code"] != float64(-32602) || e["message"] != want || data["sessionId"] != sid || data["reason"] != "session_live_elsewhere" {
			t.Errorf("%s of a session live elsewhere: %v, want -32602 %q", method, e, want)
		}
	}

	// The first window closes the thread; the second may now have it.
	first.call(ctx, "session/close", map[string]any{"sessionId": sid})
	id = second.send("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
	replayed := false
	second.await(ctx, "load", func(m map[string]any) bool {
		if m["method"] == "session/update" && strings.Contains(fmt.Sprint(m["params"]), "remember the word teal") {
			replayed = true
		}
		f, ok := m["id"].(float64)
		if ok && int(f) == id && m["method"] == nil {
			if m["error"] != nil {
				t.Fatalf("load after close: %v", m["error"])
			}
			return true
		}
		return false
	})
	if !replayed {
		t.Error("the load did not replay the first process's prompt")
	}
	first.stdin.Close()
	second.stdin.Close()
	for _, p := range []*proc{first, second} {
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatal("agent did not exit")
		}
	}
}
