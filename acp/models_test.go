package acp_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// option finds a config option by id.
func option(opts []acpsdk.SessionConfigOption, id string) *acpsdk.SessionConfigOptionSelect {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == id {
			return o.Select
		}
	}
	return nil
}

func setOption(h *harness, sid acpsdk.SessionId, id, value string) (acpsdk.SetSessionConfigOptionResponse, error) {
	return h.conn.SetSessionConfigOption(h.ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: sid, ConfigId: acpsdk.SessionConfigId(id), Value: acpsdk.SessionConfigValueId(value)}})
}

// A DeepSeek model gets the thought_level option (default high); the
// choice reaches the next request and survives a restart.
func TestThoughtLevelOption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prov := script{"hi": steps(text("ok")), "again": steps(text("ok"))}
	rec := &requests{p: prov}
	h := newHarness(t, harnessOptions{provider: rec, store: newStore(t, dir), model: "deepseek-flash"})
	cwd := t.TempDir()
	resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.SessionId
	th := option(resp.ConfigOptions, "thought_level")
	if th == nil || th.Category == nil || *th.Category != acpsdk.SessionConfigOptionCategoryThoughtLevel || th.CurrentValue != "high" {
		t.Fatalf("thought_level option = %+v, want category thought_level, current high", th)
	}
	var values []string
	for _, o := range *th.Options.Ungrouped {
		values = append(values, string(o.Value))
	}
	if strings.Join(values, ",") != "off,high,max" {
		t.Errorf("values %v, want off, high, max", values)
	}
	if _, err := h.prompt(sid, "hi"); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().Thinking; got != "high" {
		t.Errorf("first request thinking = %q, want high", got)
	}
	if _, err := setOption(h, sid, "thought_level", "extreme"); requestError(t, err, -32602) == nil {
		t.Error("an unknown level was accepted")
	}
	set, err := setOption(h, sid, "thought_level", "max")
	if err != nil || option(set.ConfigOptions, "thought_level").CurrentValue != "max" {
		t.Fatalf("set max = %+v, %v", set, err)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	rec2 := &requests{p: prov}
	h2 := newHarness(t, harnessOptions{provider: rec2, store: newStore(t, dir), model: "deepseek-flash"})
	loaded, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := option(loaded.ConfigOptions, "thought_level"); got == nil || got.CurrentValue != "max" {
		t.Errorf("thought_level after the restart = %+v, want max", got)
	}
	if _, err := h2.prompt(sid, "again"); err != nil {
		t.Fatal(err)
	}
	if got := rec2.last().Thinking; got != "max" {
		t.Errorf("request thinking after the restart = %q, want max", got)
	}
}

// Another model gets no thought_level and no thinking field unless the
// user said it takes one (--thinking).
func TestThoughtLevelOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, thinking := range []string{"", "off"} {
		rec := &requests{p: script{"hi": steps(text("ok"))}}
		h := newHarness(t, harnessOptions{provider: rec, model: "qwen3:8b", thinking: thinking})
		resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		th := option(resp.ConfigOptions, "thought_level")
		if _, err := h.prompt(resp.SessionId, "hi"); err != nil {
			t.Fatal(err)
		}
		got := rec.last().Thinking
		switch {
		case thinking == "" && (th != nil || got != ""):
			t.Errorf("no --thinking: option %+v, request thinking %q; want neither", th, got)
		case thinking == "off" && (th == nil || th.CurrentValue != "off" || got != "off"):
			t.Errorf("--thinking off: option %+v, request thinking %q; want both off", th, got)
		}
		if thinking == "" {
			if _, err := setOption(h, resp.SessionId, "thought_level", "high"); requestError(t, err, -32602) == nil {
				t.Error("thought_level set for a model that was not offered it")
			}
		}
	}
}

// usage_update.cost is the session's cumulative cost, kept across a
// restart; the prompt's answer carries the turn's tokens.
func TestCostAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cost := 0.25
	prov := agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: "ok"}, FinishReason: agent.FinishStop,
			Usage: agent.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 60, Cost: &cost, Reported: true}}, nil
	})
	h := newHarness(t, harnessOptions{provider: prov, store: newStore(t, dir)})
	sid, cwd := h.newSession(sessions.ModeAsk)
	resp, err := h.prompt(sid, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u == nil || u.InputTokens != 100 || u.OutputTokens != 10 || u.CachedReadTokens == nil || *u.CachedReadTokens != 60 {
		t.Errorf("prompt usage = %+v", resp.Usage)
	}
	lastCost := func(h *harness) *acpsdk.Cost {
		var c *acpsdk.Cost
		for _, u := range h.client.allUpdatesOf(sid) {
			if u.UsageUpdate != nil {
				c = u.UsageUpdate.Cost
			}
		}
		return c
	}
	if c := lastCost(h); c == nil || c.Currency != "USD" || math.Abs(c.Amount-0.25) > 1e-9 {
		t.Errorf("cost after one turn = %+v, want 0.25 USD", c)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, harnessOptions{provider: prov, store: newStore(t, dir)})
	if _, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.prompt(sid, "again"); err != nil {
		t.Fatal(err)
	}
	if c := lastCost(h2); c == nil || math.Abs(c.Amount-0.50) > 1e-9 {
		t.Errorf("cost after a restart and one more turn = %+v, want 0.50 USD", c)
	}
}

const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// Images reach a model that reads them, are stored beside the session's
// log (not in it), and after a restart both the model and the editor's
// replay have them again.
func TestImagesAcrossRestart(t *testing.T) {
	t.Parallel()
	if !newHarness(t, harnessOptions{provider: script{}}).init.AgentCapabilities.PromptCapabilities.Image {
		t.Error("promptCapabilities.image is false")
	}
	dir := t.TempDir()
	prov := script{"look": steps(text("a dot")), "again": steps(text("still a dot"))}
	rec := &requests{p: prov}
	h := newHarness(t, harnessOptions{provider: rec, store: newStore(t, dir), model: "deepseek-flash"})
	sid, cwd := h.newSession(sessions.ModeAsk)
	if _, err := h.conn.Prompt(h.ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("look"), acpsdk.ImageBlock(pngData, "image/png")}}); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().Messages[1]; len(got.Images) != 1 || got.Images[0].Data != pngData {
		t.Fatalf("the model was sent %+v, want the image", got)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.jsonl"))
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), pngData) {
			t.Errorf("%s carries the image inline", l)
		}
	}
	rec2 := &requests{p: prov}
	h2 := newHarness(t, harnessOptions{provider: rec2, store: newStore(t, dir), model: "deepseek-flash"})
	if _, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replayed := false
	for _, u := range h2.client.allUpdatesOf(sid) {
		if c := u.UserMessageChunk; c != nil && c.Content.Image != nil && c.Content.Image.Data == pngData {
			replayed = true
		}
	}
	if !replayed {
		t.Error("the replay does not show the image")
	}
	if _, err := h2.prompt(sid, "again"); err != nil {
		t.Fatal(err)
	}
	if got := rec2.last().Messages[1]; len(got.Images) != 1 || got.Images[0].Data != pngData {
		t.Errorf("after the restart the model was sent %+v, want the image again", got)
	}
}

// A model that does not read images gets the note, and the user is told
// once per session.
func TestImageNoteOncePerSession(t *testing.T) {
	t.Parallel()
	rec := &requests{p: agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return text("ok"), nil
	})}
	h := newHarness(t, harnessOptions{provider: rec, model: "deepseek-v4-pro"})
	sid, _ := h.newSession(sessions.ModeAsk)
	for _, p := range []string{"look", "more"} {
		if _, err := h.conn.Prompt(h.ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{
			acpsdk.TextBlock(p), acpsdk.ImageBlock(pngData, "image/png")}}); err != nil {
			t.Fatal(err)
		}
	}
	told := 0
	for _, u := range h.client.allUpdatesOf(sid) {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, "does not read images") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told %d times, want once", told)
	}
	for _, r := range rec.got {
		for _, m := range r.Messages {
			if len(m.Images) > 0 {
				t.Errorf("deepseek-v4-pro was sent an image: %+v", m)
			}
		}
	}
	if got := rec.last().Messages[1].Content; !strings.Contains(got, agent.ImageNote) {
		t.Errorf("user message %q lacks the note", got)
	}
}

// imageTool returns an image, as an MCP tool can.
type imageTool struct{}

func (imageTool) Name() string            { return "shot" }
func (imageTool) Description() string     { return "a screenshot" }
func (imageTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (imageTool) Prepare(tools.Caller, json.RawMessage) tools.Prepared {
	return tools.Prepared{
		Call: tools.Call{Title: "screenshot", Kind: tools.KindFetch, Subject: tools.Key("mcp:shots/shot")},
		Run: func(context.Context, tools.Live) tools.Result {
			return tools.Result{Text: "[image: image/png]", Images: []tools.Image{{MimeType: "image/png", Data: pngData}}}
		},
	}
}

// An image an MCP tool returns to a model that does not read images is
// left out, and the user is told so once, as for a prompt's.
func TestToolImageNoteOncePerSession(t *testing.T) {
	t.Parallel()
	rec := &requests{p: script{
		"look": steps(call("c1", "shot", nil), call("c2", "shot", nil)),
		"more": steps(call("c3", "shot", nil)),
	}}
	h := newHarness(t, harnessOptions{provider: rec, model: "deepseek-v4-pro", tools: []tools.Tool{imageTool{}}})
	sid, _ := h.newSession(sessions.ModeAuto)
	for _, p := range []string{"look", "more"} {
		if resp, err := h.prompt(sid, p); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("prompt %q = %+v, %v", p, resp, err)
		}
	}
	told := 0
	for _, u := range h.client.allUpdatesOf(sid) {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, "deepseek-v4-pro does not read images") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told %d times, want once", told)
	}
	for _, r := range rec.got {
		for _, m := range r.Messages {
			if len(m.Images) > 0 {
				t.Errorf("deepseek-v4-pro was sent an image: %+v", m)
			}
		}
	}
}

// flipTool runs do while the turn is in the middle of its tool calls.
type flipTool struct{ do func() }

func (flipTool) Name() string            { return "flip" }
func (flipTool) Description() string     { return "changes a setting" }
func (flipTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (f flipTool) Prepare(tools.Caller, json.RawMessage) tools.Prepared {
	return tools.Prepared{
		Call: tools.Call{Title: "flip", Kind: tools.KindOther, Subject: tools.Key("mcp:t/flip")},
		Run: func(context.Context, tools.Live) tools.Result {
			f.do()
			return tools.Result{Text: "flipped"}
		},
	}
}

// A thought level chosen in the middle of a turn (while a tool runs)
// applies from the next request, not from the next prompt.
func TestThoughtLevelAppliesFromTheNextRequest(t *testing.T) {
	t.Parallel()
	rec := &requests{p: script{"go": steps(call("c1", "flip", nil), text("done"))}}
	var h *harness
	var sid acpsdk.SessionId
	flip := flipTool{do: func() {
		if _, err := setOption(h, sid, "thought_level", "off"); err != nil {
			t.Errorf("set off mid-turn: %v", err)
		}
	}}
	h = newHarness(t, harnessOptions{provider: rec, model: "deepseek-flash", tools: []tools.Tool{flip}})
	sid, _ = h.newSession(sessions.ModeAuto)
	if resp, err := h.prompt(sid, "go"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", resp, err)
	}
	var got []string
	for _, r := range rec.got {
		got = append(got, r.Thinking)
	}
	if strings.Join(got, ",") != "high,off" {
		t.Errorf("thought levels of the turn's requests = %v, want high then off", got)
	}
}
