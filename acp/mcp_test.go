package acp_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
	"github.com/dsh-acp/dsh-acp/turn"
)

// mcpSession opens a session with servers and waits until each has started
// or failed (the agent itself answers session/new at once).
func (h *harness) mcpSession(mode sessions.Mode, servers ...acpsdk.McpServer) acpsdk.SessionId {
	h.t.Helper()
	resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: h.t.TempDir(), McpServers: servers})
	if err != nil {
		h.t.Fatal(err)
	}
	if mode == sessions.ModeAuto {
		if _, err := h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: resp.SessionId, ModeId: acpsdk.SessionModeId(mode)}); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := acp.WaitMCP(h.ctx, h.agent, string(resp.SessionId)); err != nil {
		h.t.Fatal(err)
	}
	return resp.SessionId
}

// modelLog records every model request, so a test reads what the model got.
type modelLog struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (r *modelLog) add(req agent.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
}

func toolNames(req agent.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

// calls plays the given tool calls one per model request, recording each
// request, then ends with "done".
func calls(rec *modelLog, cs ...agent.Response) turnFunc {
	return func(_ context.Context, step int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		rec.add(req)
		if step < len(cs) {
			return cs[step], nil
		}
		return text("done"), nil
	}
}

func finalOf(t *testing.T, ups []acpsdk.SessionUpdate, id string) *acpsdk.SessionToolCallUpdate {
	t.Helper()
	for _, u := range toolUpdates(ups, id) {
		if isFinal(id)(acpsdk.SessionUpdate{ToolCallUpdate: u}) {
			return u
		}
	}
	t.Fatalf("no final update of %s", id)
	return nil
}

func startOf(t *testing.T, ups []acpsdk.SessionUpdate, id string) *acpsdk.SessionUpdateToolCall {
	t.Helper()
	for _, u := range ups {
		if u.ToolCall != nil && string(u.ToolCall.ToolCallId) == id {
			return u.ToolCall
		}
	}
	t.Fatalf("no tool_call %s", id)
	return nil
}

// TestMCPListAndCall: a stdio and an HTTP server; their tools follow the
// bash tools in the model request, calls reach them, their results (text,
// isError, structured content) reach the model and the editor.
func TestMCPListAndCall(t *testing.T) {
	t.Parallel()
	rec := &modelLog{}
	web, _ := httpServer(t, "web")
	h := newHarness(t, harnessOptions{provider: script{"use mcp": calls(rec,
		call("c1", "mcp__loc__echo", map[string]any{"text": "hi"}),
		call("c2", "mcp__web__fail", map[string]any{}),
		call("c3", "mcp__web__stats", map[string]any{}),
	)}})
	sid := h.mcpSession(sessions.ModeAuto, stdioServer(t, "loc", "serve"), web)
	if c := h.init.AgentCapabilities.McpCapabilities; !c.Http || c.Sse || c.Acp {
		t.Errorf("mcpCapabilities = %+v", h.init.AgentCapabilities.McpCapabilities)
	}
	resp, err := h.prompt(sid, "use mcp")
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	want := []string{"bash", "bash_output", "bash_kill",
		"mcp__loc__echo", "mcp__loc__fail", "mcp__loc__slow", "mcp__loc__stats",
		"mcp__web__echo", "mcp__web__fail", "mcp__web__slow", "mcp__web__stats"}
	if got := toolNames(rec.reqs[0]); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if d := rec.reqs[0].Tools[3].Description; d != "Echo the text back." {
		t.Errorf("description = %q", d)
	}
	for id, want := range map[string]string{"c1": "echo: hi", "c2": "Error: boom", "c3": "3 files"} {
		if got, _ := toolResult(rec.reqs[len(rec.reqs)-1], id); !strings.HasPrefix(got, want) {
			t.Errorf("result %s = %q, want %q", id, got, want)
		}
	}
	ups := h.client.updatesOf(sid)
	st := startOf(t, ups, "c1")
	if st.Title != `loc: echo (text: "hi")` || st.Kind != acpsdk.ToolKindRead {
		t.Errorf("c1 = %q %q", st.Title, st.Kind)
	}
	if m, _ := st.RawInput.(map[string]any); m["text"] != "hi" {
		t.Errorf("c1 rawInput = %#v", st.RawInput)
	}
	if f := finalOf(t, ups, "c2"); *f.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("c2 status = %v", *f.Status)
	}
	f := finalOf(t, ups, "c3")
	if raw := asJSON(t, f.RawOutput); raw["files"] != float64(3) || *f.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("c3 rawOutput = %v, status %v", raw, *f.Status)
	}
}

// TestMCPFailedStart: the session works without the failed server, the
// user is told once (at the start of the next prompt), and a call to its
// tools is an error result naming it.
func TestMCPFailedStart(t *testing.T) {
	t.Parallel()
	rec := &modelLog{}
	h := newHarness(t, harnessOptions{provider: script{
		"first":  calls(rec, call("c1", "mcp__bad__query", map[string]any{})),
		"second": calls(rec),
	}})
	sid := h.mcpSession(sessions.ModeAuto, stdioServer(t, "bad", "fail"), stdioServer(t, "good", "serve"))
	for _, p := range []string{"first", "second"} {
		if _, err := h.prompt(sid, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := toolNames(rec.reqs[0]); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__bad") }) || !slices.Contains(got, "mcp__good__echo") {
		t.Errorf("tools = %v", got)
	}
	res, _ := toolResult(rec.reqs[1], "c1")
	if !strings.HasPrefix(res, "Error: ") || !strings.Contains(res, `"bad"`) {
		t.Errorf("call to the failed server = %q", res)
	}
	var notes []string
	noteIDs, otherIDs := map[string]bool{}, map[string]bool{}
	for _, u := range h.client.updatesOf(sid) {
		if u.AgentMessageChunk == nil || u.AgentMessageChunk.Content.Text == nil {
			continue
		}
		if u.AgentMessageChunk.MessageId == nil {
			t.Errorf("message chunk without a messageId: %q", u.AgentMessageChunk.Content.Text.Text)
			continue
		}
		if strings.Contains(u.AgentMessageChunk.Content.Text.Text, "MCP server") {
			notes = append(notes, u.AgentMessageChunk.Content.Text.Text)
			noteIDs[*u.AgentMessageChunk.MessageId] = true
		} else {
			otherIDs[*u.AgentMessageChunk.MessageId] = true
		}
	}
	for id := range noteIDs {
		if otherIDs[id] {
			t.Errorf("the notice shares messageId %s with the model's answer", id)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], `MCP server "bad" failed to start: `) {
		t.Fatalf("notices = %q, want one", notes)
	}
	if first := h.client.updatesOf(sid)[0]; first.AgentMessageChunk == nil || first.AgentMessageChunk.Content.Text.Text != notes[0] {
		t.Errorf("the notice is not the prompt's first update: %+v", first)
	}
}

// TestMCPSessionsIsolated: each session's model request carries its own
// servers' tools only, and a call to another session's tool is unknown.
func TestMCPSessionsIsolated(t *testing.T) {
	t.Parallel()
	recA, recB := &modelLog{}, &modelLog{}
	// Before the harness: cleanups run last first, and the HTTP server
	// must outlive the agent's sessions with it.
	web, _ := httpServer(t, "beta")
	h := newHarness(t, harnessOptions{provider: script{
		"in a": calls(recA, call("a1", "mcp__alpha__echo", map[string]any{"text": "a"})),
		"in b": calls(recB, call("b1", "mcp__alpha__echo", map[string]any{"text": "b"})),
	}})
	a := h.mcpSession(sessions.ModeAuto, stdioServer(t, "alpha", "serve"))
	b := h.mcpSession(sessions.ModeAuto, web)
	plain, _ := h.newSession(sessions.ModeAuto)
	for sid, p := range map[acpsdk.SessionId]string{a: "in a", b: "in b"} {
		if _, err := h.prompt(sid, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range toolNames(recA.reqs[0]) {
		if strings.Contains(n, "beta") {
			t.Errorf("session a sees %s", n)
		}
	}
	for _, n := range toolNames(recB.reqs[0]) {
		if strings.Contains(n, "alpha") {
			t.Errorf("session b sees %s", n)
		}
	}
	if got, _ := toolResult(recA.reqs[1], "a1"); got != "echo: a" {
		t.Errorf("a1 = %q", got)
	}
	if got, _ := toolResult(recB.reqs[1], "b1"); got != `Error: unknown tool "mcp__alpha__echo"` {
		t.Errorf("b1 = %q", got)
	}
	if len(h.client.updatesOf(plain)) != 0 {
		t.Errorf("a session without servers got updates")
	}
}

// TestMCPPermission: in Ask mode a call asks (allow once / always this
// tool / reject) and "always" covers that tool only; --allow and --deny
// name mcp:<server>/<tool> (deny wins, in Auto mode too); a read-only tool
// runs without asking with AllowReadOnly.
func TestMCPPermission(t *testing.T) {
	t.Parallel()
	t.Run("ask and always", func(t *testing.T) {
		t.Parallel()
		rec := &modelLog{}
		h := newHarness(t, harnessOptions{
			provider: script{"go": calls(rec,
				call("c1", "mcp__loc__stats", map[string]any{}),
				call("c2", "mcp__loc__stats", map[string]any{}),
				call("c3", "mcp__loc__fail", map[string]any{}),
			)},
			onPermission: func(_ context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
				if string(r.ToolCall.ToolCallId) == "c1" {
					return selected("allow_always"), nil
				}
				return selected("reject_once"), nil
			},
		})
		sid := h.mcpSession(sessions.ModeAsk, stdioServer(t, "loc", "serve"))
		if _, err := h.prompt(sid, "go"); err != nil {
			t.Fatal(err)
		}
		perms := h.client.permsOf(sid)
		if len(perms) != 2 || string(perms[0].ToolCall.ToolCallId) != "c1" || string(perms[1].ToolCall.ToolCallId) != "c3" {
			t.Fatalf("asked %d times: %+v", len(perms), perms)
		}
		var names []string
		for _, o := range perms[0].Options {
			names = append(names, string(o.OptionId)+"="+o.Name)
		}
		if want := []string{"allow_once=Allow once", "allow_always=Always allow `mcp:loc/stats` in this session", "reject_once=Reject"}; !slices.Equal(names, want) {
			t.Errorf("options = %q", names)
		}
		last := rec.reqs[len(rec.reqs)-1]
		for id, want := range map[string]string{"c1": "3 files", "c2": "3 files", "c3": "Error: permission denied: the user rejected"} {
			if got, _ := toolResult(last, id); !strings.HasPrefix(got, want) {
				t.Errorf("%s = %q, want %q", id, got, want)
			}
		}
	})
	t.Run("rules", func(t *testing.T) {
		t.Parallel()
		rec := &modelLog{}
		h := newHarness(t, harnessOptions{
			provider: script{"go": calls(rec,
				call("c1", "mcp__loc__stats", map[string]any{}),
				call("c2", "mcp__loc__fail", map[string]any{}),
				call("c3", "mcp__loc__echo", map[string]any{"text": "x"}),
			)},
			rules: permission.Rules{Allow: []string{"mcp:loc/stats", "mcp:loc/*"}, Deny: []string{"mcp:loc/fail"}},
		})
		for _, mode := range []sessions.Mode{sessions.ModeAsk, sessions.ModeAuto} {
			rec.reqs = nil
			sid := h.mcpSession(mode, stdioServer(t, "loc", "serve"))
			if _, err := h.prompt(sid, "go"); err != nil {
				t.Fatal(err)
			}
			if n := len(h.client.permsOf(sid)); n != 0 {
				t.Errorf("%s: asked %d times", mode, n)
			}
			last := rec.reqs[len(rec.reqs)-1]
			for id, want := range map[string]string{"c1": "3 files\n{\"files\":3}", "c2": `Error: permission denied: the tool call matches the deny rule "mcp:loc/fail"; it was not run`, "c3": "echo: x"} {
				if got, _ := toolResult(last, id); got != want {
					t.Errorf("%s: %s = %q, want %q", mode, id, got, want)
				}
			}
		}
	})
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		rec := &modelLog{}
		h := newHarness(t, harnessOptions{
			provider: script{"go": calls(rec,
				call("c1", "mcp__loc__echo", map[string]any{"text": "x"}),
				call("c2", "mcp__loc__stats", map[string]any{}),
			)},
			mcp: turn.MCPOptions{AllowReadOnly: true},
		})
		sid := h.mcpSession(sessions.ModeAsk, stdioServer(t, "loc", "serve"))
		if _, err := h.prompt(sid, "go"); err != nil {
			t.Fatal(err)
		}
		perms := h.client.permsOf(sid)
		if len(perms) != 1 || string(perms[0].ToolCall.ToolCallId) != "c2" || *perms[0].ToolCall.Title != "loc: stats" {
			t.Fatalf("asked: %+v", perms)
		}
		if got, _ := toolResult(rec.reqs[len(rec.reqs)-1], "c1"); got != "echo: x" {
			t.Errorf("c1 = %q", got)
		}
	})
}

// TestMCPCancelDuringCall: a cancel reaches the server (MCP's cancellation)
// and the prompt ends "cancelled" at once.
func TestMCPCancelDuringCall(t *testing.T) {
	t.Parallel()
	rec := &modelLog{}
	web, ev := httpServer(t, "web")
	h := newHarness(t, harnessOptions{provider: script{"wait": calls(rec, call("c1", "mcp__web__slow", map[string]any{}))}})
	sid := h.mcpSession(sessions.ModeAuto, web)
	done := h.promptAsync(sid, "wait")
	select {
	case <-ev.slowStarted:
	case <-h.ctx.Done():
		t.Fatal("the call never reached the server")
	}
	h.cancel(sid)
	if r := h.await(done, "cancelled prompt"); r.err != nil || r.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Fatalf("prompt = %+v %v", r.resp, r.err)
	}
	select {
	case <-ev.sawCancel:
	case <-h.ctx.Done():
		t.Fatal("the server never saw the cancel")
	}
	if f := finalOf(t, h.client.updatesOf(sid), "c1"); *f.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("c1 status = %v", *f.Status)
	}
}

// TestMCPProcessesEnd: a session's stdio servers are gone when session/close
// answers, and the others when Serve has returned.
func TestMCPProcessesEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	a := h.mcpSession(sessions.ModeAsk, stdioServer(t, "one", "serve"), stdioServer(t, "two", "serve"))
	b := h.mcpSession(sessions.ModeAsk, stdioServer(t, "three", "serve"))
	ga, gb := acp.MCPGroups(h.agent, string(a)), acp.MCPGroups(h.agent, string(b))
	if len(ga) != 2 || len(gb) != 1 {
		t.Fatalf("groups %v %v", ga, gb)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: a}); err != nil {
		t.Fatal(err)
	}
	for _, g := range ga {
		if !testutil.GroupGone(g) {
			t.Errorf("group %d of a closed session still runs", g)
		}
	}
	if testutil.GroupGone(gb[0]) {
		t.Fatal("the other session's server is gone too")
	}
	h.toAgent.Close()
	select {
	case <-h.served:
	case <-h.ctx.Done():
		t.Fatal("Serve did not return")
	}
	if !testutil.GroupGone(gb[0]) {
		t.Errorf("group %d still runs after Serve returned", gb[0])
	}
}

// TestMCPResume: session/resume (and load, through the same path) starts
// the servers the editor passes for a stored session.
func TestMCPResume(t *testing.T) {
	t.Parallel()
	rec := &modelLog{}
	h := newHarness(t, harnessOptions{store: newStore(t, t.TempDir()), provider: script{
		"hello": steps(text("hi")),
		"again": calls(rec, call("c1", "mcp__loc__echo", map[string]any{"text": "back"})),
	}})
	sid, cwd := h.newSession(sessions.ModeAuto)
	if _, err := h.prompt(sid, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.ResumeSession(h.ctx, acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: cwd,
		McpServers: []acpsdk.McpServer{stdioServer(t, "loc", "serve")}}); err != nil {
		t.Fatal(err)
	}
	if err := acp.WaitMCP(h.ctx, h.agent, string(sid)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.prompt(sid, "again"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(rec.reqs[0]), "mcp__loc__echo") {
		t.Errorf("tools after resume = %v", toolNames(rec.reqs[0]))
	}
	if got, _ := toolResult(rec.reqs[1], "c1"); got != "echo: back" {
		t.Errorf("c1 = %q", got)
	}
}

// serviceLaunchers starts a session's stdio servers as services of that
// session in the executor, as the agent does (cmd/dsh-acp).
func serviceLaunchers(ex *executor.Local) func(string) mcptool.Launcher {
	return func(id string) mcptool.Launcher { return serviceLauncher{ex: ex, owner: id} }
}

type serviceLauncher struct {
	ex    *executor.Local
	owner string
}

func (l serviceLauncher) Launch(spec mcptool.Launch) (mcptool.Process, error) {
	svc, err := l.ex.StartService(executor.ServiceSpec{Owner: l.owner, Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env, Stderr: spec.Stderr})
	if err != nil {
		return nil, err
	}
	return svc, nil
}
