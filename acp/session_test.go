package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

func TestInitialize(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}, noInit: true})
	resp, err := h.conn.Initialize(h.ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo:      &acpsdk.Implementation{Name: "zed", Version: "0.200.0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtocolVersion != 1 {
		t.Errorf("protocolVersion = %d, want 1", resp.ProtocolVersion)
	}
	if resp.AgentInfo == nil || resp.AgentInfo.Name != "dsh-acp-test" || resp.AgentInfo.Version != "1.2.3" {
		t.Errorf("agentInfo = %+v, want the configured name and version", resp.AgentInfo)
	}
	// Check the wire shape, as an editor reads it.
	m := asJSON(t, resp)
	caps, _ := m["agentCapabilities"].(map[string]any)
	pc, _ := caps["promptCapabilities"].(map[string]any)
	if pc["embeddedContext"] != true {
		t.Errorf("promptCapabilities.embeddedContext = %v, want true", pc["embeddedContext"])
	}
	if pc["image"] != true {
		t.Errorf("promptCapabilities.image = %v, want true", pc["image"])
	}
	if v, ok := pc["audio"]; ok && v != false {
		t.Errorf("promptCapabilities.audio = %v, want false or absent", v)
	}
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	if _, ok := sc["close"]; !ok {
		t.Errorf("sessionCapabilities = %v, want close present", sc)
	}
	if caps["loadSession"] == true {
		t.Error("loadSession advertised but not implemented")
	}
}

func TestNewSessionInvalidCwd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cwd  string
		want string
	}{
		{name: "relative", cwd: "src/project", want: "absolute"},
		{name: "missing", cwd: filepath.Join(dir, "missing"), want: "does not exist"},
		{name: "a file", cwd: file, want: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: tt.cwd, McpServers: []acpsdk.McpServer{}})
			re := requestError(t, err, -32602)
			if msg := errorText(re); !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.cwd) {
				t.Errorf("error %q does not say %q about %q", msg, tt.want, tt.cwd)
			}
		})
	}
	if n := h.reg.Len(); n != 0 {
		t.Errorf("%d sessions registered after failed creates", n)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Modes == nil {
		t.Fatal("no modes advertised")
	}
	var ids []string
	for _, m := range resp.Modes.AvailableModes {
		ids = append(ids, string(m.Id))
		if m.Name == "" {
			t.Errorf("mode %q has no name", m.Id)
		}
	}
	if diff := cmp.Diff([]string{"ask", "auto"}, ids); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	if resp.Modes.CurrentModeId != "ask" {
		t.Errorf("current mode = %q, want ask", resp.Modes.CurrentModeId)
	}
	sid := resp.SessionId
	if _, err := h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "auto"}); err != nil {
		t.Fatal(err)
	}
	s, err := h.reg.Get(string(sid))
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != sessions.ModeAuto {
		t.Errorf("mode = %q after set_mode auto", s.Mode())
	}
	_, err = h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "yolo"})
	re := requestError(t, err, -32602)
	if !strings.Contains(errorText(re), "yolo") {
		t.Errorf("error %q does not name the mode", errorText(re))
	}
	if s.Mode() != sessions.ModeAuto {
		t.Errorf("mode = %q after a rejected set_mode, want auto kept", s.Mode())
	}
}

func TestUnknownSessionID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	const id = "no-such-session-5d1e"
	tests := []struct {
		name string
		do   func() error
	}{
		{name: "prompt", do: func() error { _, err := h.prompt(id, "hi"); return err }},
		{name: "set_mode", do: func() error {
			_, err := h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: id, ModeId: "auto"})
			return err
		}},
		{name: "close", do: func() error {
			_, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: id})
			return err
		}},
		// session/cancel is a notification: nothing answers on the wire, so
		// the handler itself is asked.
		{name: "cancel", do: func() error {
			return h.agent.Cancel(h.ctx, acpsdk.CancelNotification{SessionId: id})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := requestError(t, tt.do(), -32002)
			if !strings.Contains(errorText(re), id) {
				t.Errorf("error %q does not name the session id", errorText(re))
			}
		})
	}
	// A cancel for an unknown session over the wire is dropped, and the
	// connection keeps serving.
	h.cancel(id)
	if _, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("connection stopped serving: %v", err)
	}
}

func TestUnsupportedMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}})
	_, err := h.conn.Logout(h.ctx, acpsdk.LogoutRequest{})
	requestError(t, err, -32601)
	// Without a store nothing can be loaded: the session is not found.
	_, err = h.conn.LoadSession(h.ctx, acpsdk.LoadSessionRequest{SessionId: "x", Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	requestError(t, err, -32002)
	if _, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("connection stopped serving: %v", err)
	}
}

func TestPromptStreamsTextAndThoughts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{
		"explain": func(_ context.Context, _ int, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
			emit(agent.Delta{Reasoning: "Considering"})
			emit(agent.Delta{Reasoning: " the question."})
			emit(agent.Delta{Text: "It is "})
			emit(agent.Delta{Text: "simple."})
			return agent.Response{Message: agent.Message{Content: "It is simple.", ReasoningContent: "Considering the question."}, FinishReason: agent.FinishStop}, nil
		},
	}})
	sid, _ := h.newSession(sessions.ModeAsk)
	resp, err := h.prompt(sid, "explain")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q, want end_turn", resp.StopReason)
	}
	var got []string
	for _, u := range h.client.updatesOf(sid) {
		switch {
		case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
			got = append(got, "thought:"+u.AgentThoughtChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			got = append(got, "text:"+u.AgentMessageChunk.Content.Text.Text)
		case u.UsageUpdate != nil, u.AvailableCommandsUpdate != nil:
		default:
			got = append(got, "other")
		}
	}
	want := []string{"thought:Considering", "thought: the question.", "text:It is ", "text:simple."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestPromptEmbeddedContextReachesModel(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 1)
	h := newHarness(t, harnessOptions{provider: agentProviderFunc(func(_ context.Context, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		seen <- req.Messages[len(req.Messages)-1].Content
		return text("ok"), nil
	})})
	sid, _ := h.newSession(sessions.ModeAsk)
	_, err := h.conn.Prompt(h.ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("look at"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///x/main.go", Text: "package main\n"}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := <-seen
	if !strings.Contains(got, "look at") || !strings.Contains(got, "file:///x/main.go") || !strings.Contains(got, "package main") {
		t.Errorf("user message = %q, want the text and the embedded resource", got)
	}
}

type agentProviderFunc = agent.ProviderFunc

func TestProviderErrorIsJSONRPCError(t *testing.T) {
	t.Parallel()
	const msg = "model request failed: the API key was rejected (401); set DSH_API_KEY"
	h := newHarness(t, harnessOptions{provider: agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{}, &providerErr{msg}
	})})
	sid, _ := h.newSession(sessions.ModeAsk)
	_, err := h.prompt(sid, "hi")
	re := requestError(t, err, -32603)
	if !strings.Contains(errorText(re), "the API key was rejected (401); set DSH_API_KEY") {
		t.Errorf("error %q does not carry the provider's message", errorText(re))
	}
	// The session is still usable: the failed turn ended.
	_, err = h.prompt(sid, "again")
	requestError(t, err, -32603)
}

type providerErr struct{ msg string }

func (e *providerErr) Error() string { return e.msg }
func (e *providerErr) Unwrap() error { return agent.ErrProvider }

func TestPanicInHandlerIsRecovered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{
		"boom": func(context.Context, int, agent.Request, func(agent.Delta)) (agent.Response, error) {
			panic("provider bug")
		},
		"fine": steps(text("fine")),
	}})
	sid, _ := h.newSession(sessions.ModeAsk)
	_, err := h.prompt(sid, "boom")
	requestError(t, err, -32603)
	// The same session and the connection keep working.
	resp, err := h.prompt(sid, "fine")
	if err != nil {
		t.Fatalf("prompt after a panic: %v", err)
	}
	if resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q", resp.StopReason)
	}
	other, _ := h.newSession(sessions.ModeAsk)
	if _, err := h.prompt(other, "fine"); err != nil {
		t.Fatalf("other session after a panic: %v", err)
	}
}
