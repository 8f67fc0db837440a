package acp_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// requests records every model request of a provider.
type requests struct {
	p agent.Provider

	mu  sync.Mutex
	got []agent.Request
}

func (r *requests) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	r.mu.Lock()
	r.got = append(r.got, req)
	r.mu.Unlock()
	return r.p.Stream(ctx, req, emit)
}

func (r *requests) last() agent.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

type fixedModels []string

func (m fixedModels) ListModels(context.Context) ([]string, error) { return m, nil }

type failingModels struct{}

func (failingModels) ListModels(context.Context) ([]string, error) {
	return nil, errors.New("404 Not Found")
}

func newStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A session stored by one agent is loaded by the next (a restart): the
// conversation is replayed before the answer, the settings come back, and
// the next model request carries the same history, tool call ids included.
func TestLoadAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prov := script{
		"first line of the prompt\nmore": steps(bash("call_1", "echo hi"), text("done")),
		"again":                          steps(text("again done")),
	}
	rec1 := &requests{p: prov}
	h1 := newHarness(t, harnessOptions{provider: rec1, store: newStore(t, dir), models: fixedModels{"test-model", "other-model"}})
	if !h1.init.AgentCapabilities.LoadSession || h1.init.AgentCapabilities.SessionCapabilities.List == nil ||
		h1.init.AgentCapabilities.SessionCapabilities.Resume == nil || h1.init.AgentCapabilities.SessionCapabilities.Delete == nil {
		t.Fatalf("capabilities %+v, want load, list, resume and delete", h1.init.AgentCapabilities)
	}
	sid, cwd := h1.newSession(sessions.ModeAuto)
	if _, err := h1.prompt(sid, "first line of the prompt\nmore"); err != nil {
		t.Fatal(err)
	}
	set, err := h1.conn.SetSessionConfigOption(h1.ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "other-model"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.ConfigOptions[1].Select.CurrentValue; got != "other-model" {
		t.Errorf("model after set = %q", got)
	}
	before := rec1.last().Messages
	var title string
	for _, u := range h1.client.allUpdatesOf(sid) {
		if u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil {
			title = *u.SessionInfoUpdate.Title
		}
	}
	if title != "first line of the prompt" {
		t.Errorf("title %q", title)
	}
	// Still live in h1: another process cannot have it.
	rec2 := &requests{p: prov}
	h2 := newHarness(t, harnessOptions{provider: rec2, store: newStore(t, dir), models: fixedModels{"test-model", "other-model"}})
	_, err = h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if re := requestError(t, err, -32602); re != nil && re.Message != "session "+string(sid)+" is live in another dsh-acp process (another editor window?); close it there first" {
		t.Errorf("load of a session live elsewhere: %q", re.Message)
	}
	if _, err := h1.conn.CloseSession(h1.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}

	list, err := h2.conn.ListSessions(h2.ctx, acpsdk.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionId != sid || list.Sessions[0].Title == nil || *list.Sessions[0].Title != title || list.Sessions[0].UpdatedAt == nil {
		t.Fatalf("list = %+v, %v", list, err)
	}
	_, err = h2.conn.ListSessions(h2.ctx, acpsdk.ListSessionsRequest{Cursor: acpsdk.Ptr("nonsense")})
	requestError(t, err, -32602)

	loaded, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Modes.CurrentModeId != "auto" || loaded.ConfigOptions[1].Select.CurrentValue != "other-model" {
		t.Errorf("loaded mode %q, options %+v", loaded.Modes.CurrentModeId, loaded.ConfigOptions)
	}
	var replay []string
	for _, u := range h2.client.allUpdatesOf(sid) {
		switch {
		case u.UserMessageChunk != nil:
			replay = append(replay, "user:"+u.UserMessageChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil:
			replay = append(replay, "agent:"+u.AgentMessageChunk.Content.Text.Text)
		case u.ToolCall != nil:
			replay = append(replay, "tool:"+string(u.ToolCall.ToolCallId)+":"+u.ToolCall.Title+":"+string(u.ToolCall.Kind)+":"+string(u.ToolCall.Status))
		case u.AvailableCommandsUpdate != nil:
			replay = append(replay, "commands")
		case u.UsageUpdate != nil:
			replay = append(replay, fmt.Sprintf("usage of %d", u.UsageUpdate.Size))
		default:
			replay = append(replay, "other")
		}
	}
	// The replay, then the commands and the stored usage (the ring at once).
	want := []string{"user:first line of the prompt\nmore", "tool:call_1:echo hi:execute:completed", "agent:done", "commands", "usage of 128000"}
	if diff := cmp.Diff(want, replay); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}

	// The loaded session's next request: the same history, then the prompt,
	// with the model chosen before the restart.
	if _, err := h2.prompt(sid, "again"); err != nil {
		t.Fatal(err)
	}
	wantMsgs := append(append([]agent.Message(nil), before...),
		agent.Message{Role: agent.RoleAssistant, Content: "done"},
		agent.Message{Role: agent.RoleUser, Content: "again"})
	got := rec2.last()
	if diff := cmp.Diff(wantMsgs, got.Messages); diff != "" {
		t.Errorf("history after the restart (-want +got):\n%s", diff)
	}
	if got.Model != "other-model" {
		t.Errorf("model after the restart = %q, want other-model", got.Model)
	}
}

// The model option lists the configured model first, also when listing
// fails; bad ids and values are -32602 naming the valid ones; set_mode and
// the mode option announce each other.
func TestConfigOptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{}, models: failingModels{}})
	resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ConfigOptions) != 2 {
		t.Fatalf("config options %+v", resp.ConfigOptions)
	}
	mode, model := resp.ConfigOptions[0].Select, resp.ConfigOptions[1].Select
	if mode.Id != "mode" || *mode.Category != "mode" || mode.CurrentValue != "ask" || len(*mode.Options.Ungrouped) != 2 {
		t.Errorf("mode option %+v", mode)
	}
	if model.Id != "model" || *model.Category != "model" || model.CurrentValue != "test-model" || len(*model.Options.Ungrouped) != 1 {
		t.Errorf("model option %+v (the fallback is the configured model alone)", model)
	}
	sid := resp.SessionId
	set := func(id, value string) (acpsdk.SetSessionConfigOptionResponse, error) {
		return h.conn.SetSessionConfigOption(h.ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: acpsdk.SessionConfigId(id), Value: acpsdk.SessionConfigValueId(value)}})
	}
	_, err = set("colour", "red")
	if re := requestError(t, err, -32602); re != nil && !strings.Contains(fmt.Sprint(re.Data), `"mode", "model" and "thought_level"`) {
		t.Errorf("unknown option: %v", re)
	}
	_, err = set("model", "gpt-9")
	if re := requestError(t, err, -32602); re != nil && !strings.Contains(fmt.Sprint(re.Data), `"test-model"`) {
		t.Errorf("unknown model: %v", re)
	}
	got, err := set("mode", "auto")
	if err != nil || got.ConfigOptions[0].Select.CurrentValue != "auto" {
		t.Fatalf("set mode = %+v, %v", got, err)
	}
	h.client.waitUpdate(t, h.ctx, sid, "current_mode_update", func(u acpsdk.SessionUpdate) bool {
		return u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "auto"
	})
	if _, err := h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	h.client.waitUpdate(t, h.ctx, sid, "config_option_update", func(u acpsdk.SessionUpdate) bool {
		return u.ConfigOptionUpdate != nil && u.ConfigOptionUpdate.ConfigOptions[0].Select.CurrentValue == "ask"
	})
}

// A task running when its agent stopped is gone after the load: the first
// request says so once, and the task tools answer the pinned error. Task
// ids continue the store's sequence. Delete removes the session.
func TestTaskGoneAfterRestartAndDelete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st1 := newStore(t, dir)
	prov := script{
		"start": steps(bash("call_1", "sleep 30", "run_in_background", true), text("started")),
		"poll":  steps(call("call_2", "bash_output", map[string]any{"task_id": "bash-1"}), text("polled")),
	}
	h1 := newHarness(t, harnessOptions{provider: prov, store: st1})
	sid, cwd := h1.newSession(sessions.ModeAuto)
	if _, err := h1.prompt(sid, "start"); err != nil {
		t.Fatal(err)
	}
	// A crash: the process ends without closing its sessions. Here the
	// session file is copied while h1 still holds it, as a killed
	// process would have left it.
	crashed := t.TempDir()
	copyStore(t, dir, crashed)

	rec := &requests{p: prov}
	h2 := newHarness(t, harnessOptions{provider: rec, store: newStore(t, crashed)})
	if _, err := h2.conn.ResumeSession(h2.ctx, acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if ups := h2.client.allUpdatesOf(sid); len(ups) != 2 || ups[0].AvailableCommandsUpdate == nil || ups[1].UsageUpdate == nil {
		t.Errorf("resume sent %+v, want the commands and the usage only", ups)
	}
	if _, err := h2.prompt(sid, "poll"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	first, second := rec.got[0], rec.got[1]
	rec.mu.Unlock()
	notice := "background bash task bash-1 is gone: it was stopped when dsh-acp restarted. Its output is lost."
	if n := first.Messages[len(first.Messages)-1]; n.Role != agent.RoleUser || n.Content != notice {
		t.Errorf("first request ends with %+v, want the notice %q", n, notice)
	}
	if res, _ := toolResult(second, "call_2"); res != "Error: task bash-1 is gone: it was stopped when dsh-acp restarted" {
		t.Errorf("bash_output on a gone task: %q", res)
	}
	if next, err := newStore(t, crashed).NextTaskIDs(1); err != nil || next != 2 {
		t.Errorf("next task id = %d, %v; want 2 (bash-1 was used)", next, err)
	}
	if _, err := h2.conn.UnstableDeleteSession(h2.ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	_, err := h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	requestError(t, err, -32002)
	_, err = h2.conn.LoadSession(h2.ctx, acpsdk.LoadSessionRequest{SessionId: "x", Cwd: "relative", McpServers: []acpsdk.McpServer{}})
	requestError(t, err, -32602)
}

func copyStore(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// session/load of a session live in this process replays it too, with a
// store and without: a client reopening a thread it never closed shows it
// whole, and the session keeps its state.
func TestLoadLiveReplays(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		t.Run(fmt.Sprintf("stored=%v", stored), func(t *testing.T) {
			t.Parallel()
			prov := script{"list it": steps(bash("call_1", "echo hi"), text("done"))}
			o := harnessOptions{provider: prov}
			if stored {
				o.store = newStore(t, t.TempDir())
			}
			h := newHarness(t, o)
			sid, cwd := h.newSession(sessions.ModeAuto)
			if _, err := h.prompt(sid, "list it"); err != nil {
				t.Fatal(err)
			}
			h.client.waitUpdate(t, h.ctx, sid, "the call's end", isFinal("call_1"))
			from := len(h.client.updatesOf(sid))
			if _, err := h.conn.LoadSession(h.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatal(err)
			}
			var prompt string
			var call *acpsdk.SessionUpdateToolCall
			for _, u := range h.client.updatesOf(sid)[from:] {
				if u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil {
					prompt += u.UserMessageChunk.Content.Text.Text
				}
				if u.ToolCall != nil && u.ToolCall.ToolCallId == "call_1" {
					call = u.ToolCall
				}
			}
			if prompt != "list it" || call == nil || call.Status != acpsdk.ToolCallStatusCompleted || !strings.Contains(contentText(call.Content), "hi") {
				t.Errorf("replay of a live session: prompt %q, call %+v", prompt, call)
			}
		})
	}
}

// The slash commands reach clients that drop what comes before they know a
// session: they are announced again at the start of its first prompt, and
// again at the first prompt after a session/load or session/resume.
func TestCommandsAnnouncedAtFirstPrompt(t *testing.T) {
	t.Parallel()
	prov := script{"one": steps(text("1")), "two": steps(text("2")), "three": steps(text("3")), "four": steps(text("4"))}
	h := newHarness(t, harnessOptions{provider: prov, store: newStore(t, t.TempDir())})
	sid, cwd := h.newSession(sessions.ModeAuto)
	commands := func(prompt string) int {
		t.Helper()
		from := len(h.client.allUpdatesOf(sid))
		if _, err := h.prompt(sid, prompt); err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, u := range h.client.allUpdatesOf(sid)[from:] {
			if u.AvailableCommandsUpdate != nil {
				if i != 0 {
					t.Errorf("%s: commands announced as update %d, want first", prompt, i)
				}
				if len(u.AvailableCommandsUpdate.AvailableCommands) == 0 {
					t.Errorf("%s: no commands", prompt)
				}
				n++
			}
		}
		return n
	}
	if n := commands("one"); n != 1 {
		t.Errorf("first prompt announced the commands %d times, want 1", n)
	}
	if n := commands("two"); n != 0 {
		t.Errorf("second prompt announced the commands %d times, want 0", n)
	}
	if _, err := h.conn.LoadSession(h.ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if n := commands("three"); n != 1 {
		t.Errorf("first prompt after load announced the commands %d times, want 1", n)
	}
	if _, err := h.conn.ResumeSession(h.ctx, acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if n := commands("four"); n != 1 {
		t.Errorf("first prompt after resume announced the commands %d times, want 1", n)
	}
}
