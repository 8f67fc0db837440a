package acp_test

import (
	"context"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

func TestToolCallShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		command    string
		wantTitle  string
		wantStatus acpsdk.ToolCallStatus
		wantText   string // the model's text, shown in the console block
		wantExit   float64
		// wantBody is the code block the call shows when its title shows
		// only its first line.
		wantBody string
	}{
		{name: "success", command: "echo one\n  echo two", wantTitle: "echo one (+1 more line)", wantBody: "```sh\necho one\n  echo two\n```", wantStatus: acpsdk.ToolCallStatusCompleted, wantText: "one\ntwo\n"},
		{name: "non-zero exit", command: "echo failing; exit 3", wantTitle: "echo failing; exit 3", wantStatus: acpsdk.ToolCallStatusFailed, wantText: "failing\n[exit code: 3]", wantExit: 3},
		{name: "output with a fence", command: "printf '```\\n'", wantTitle: "printf '```\\n'", wantStatus: acpsdk.ToolCallStatusCompleted, wantText: "```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var saw modelSaw
			first := bash("c1", tt.command)
			h := newHarness(t, harnessOptions{provider: script{"p": saw.turn(first, "c1")}})
			sid, cwd := h.newSession(sessions.ModeAuto)
			if resp, err := h.prompt(sid, "p"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %+v, %v", resp, err)
			}
			if got := saw.get("c1"); got != tt.wantText {
				t.Errorf("model was told %q, want %q", got, tt.wantText)
			}

			ups := h.client.updatesOf(sid)
			var start *acpsdk.SessionUpdateToolCall
			var statuses []string
			for _, u := range ups {
				if u.ToolCall != nil && u.ToolCall.ToolCallId == "c1" {
					start = u.ToolCall
					statuses = append(statuses, string(u.ToolCall.Status))
				}
				if u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "c1" && u.ToolCallUpdate.Status != nil {
					statuses = append(statuses, string(*u.ToolCallUpdate.Status))
				}
			}
			if start == nil {
				t.Fatal("no tool_call sent")
			}
			if diff := cmp.Diff([]string{"pending", "in_progress", string(tt.wantStatus)}, statuses); diff != "" {
				t.Errorf("status sequence (-want +got):\n%s", diff)
			}
			if start.Kind != acpsdk.ToolKindExecute || start.Title != tt.wantTitle || strings.Contains(start.Title, "\n") {
				t.Errorf("tool_call kind %q title %q, want execute %q on one line", start.Kind, start.Title, tt.wantTitle)
			}
			wantInput := map[string]any{"command": tt.command, "description": "test command c1"}
			if diff := cmp.Diff(wantInput, start.RawInput); diff != "" {
				t.Errorf("rawInput (-want +got):\n%s", diff)
			}
			if got := contentText(start.Content); !strings.Contains(got, "test command c1") {
				t.Errorf("tool_call content %q lacks the description", got)
			}
			if got := contentText(start.Content); (tt.wantBody == "") == strings.Contains(got, "```sh") || !strings.Contains(got, tt.wantBody) {
				t.Errorf("tool_call content %q, want the command's block %q", got, tt.wantBody)
			}

			final := toolUpdates(ups, "c1")
			last := final[len(final)-1]
			txt := contentText(last.Content)
			fence := "```"
			for strings.Contains(tt.wantText, fence) {
				fence += "`"
			}
			body := tt.wantText
			if !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			if !strings.Contains(txt, fence+"console\n"+body+fence) {
				t.Errorf("final content %q lacks the result in a %sconsole block", txt, fence)
			}
			raw, _ := asJSON(t, map[string]any{"r": last.RawOutput})["r"].(map[string]any)
			if raw["exitCode"] != tt.wantExit || raw["cwd"] != cwd {
				t.Errorf("rawOutput = %v, want exitCode %v and cwd %s", raw, tt.wantExit, cwd)
			}
		})
	}
}

func TestTaskToolTitles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: script{"p": steps(
		call("r", "bash_output", map[string]any{"task_id": "bash-999"}),
		call("k", "bash_kill", map[string]any{"task_id": "bash-999"}),
	)}})
	sid, _ := h.newSession(sessions.ModeAsk)
	if _, err := h.prompt(sid, "p"); err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, u := range h.client.updatesOf(sid) {
		if u.ToolCall != nil {
			titles[string(u.ToolCall.ToolCallId)] = u.ToolCall.Title
		}
	}
	want := map[string]string{"r": "Read output from background task bash-999", "k": "Kill background task bash-999"}
	if diff := cmp.Diff(want, titles); diff != "" {
		t.Errorf("titles (-want +got):\n%s", diff)
	}
	if txt, st := h.finalText(sid, "r"); st != acpsdk.ToolCallStatusFailed || !strings.Contains(txt, `unknown bash task "bash-999"`) {
		t.Errorf("bash_output on an unknown task: %s %q", st, txt)
	}
}

// TestLiveOutputText: a command prints, blocks on a handshake, prints again;
// its first line reaches the editor while it is still running.
func TestLiveOutputText(t *testing.T) {
	t.Parallel()
	gate := fifo(t)
	h := newHarness(t, harnessOptions{provider: script{"p": steps(bash("c1", "echo first; cat "+gate+" >/dev/null; echo second"))}})
	sid, _ := h.newSession(sessions.ModeAuto)
	done := h.promptAsync(sid, "p")
	live := h.client.waitUpdate(t, h.ctx, sid, "live output", func(u acpsdk.SessionUpdate) bool {
		tu := u.ToolCallUpdate
		return tu != nil && tu.ToolCallId == "c1" && strings.Contains(contentText(tu.Content), "```console\nfirst\n")
	})
	if st := live.ToolCallUpdate.Status; st != nil && *st != acpsdk.ToolCallStatusInProgress {
		t.Errorf("live update has status %q", *st)
	}
	if strings.Contains(contentText(live.ToolCallUpdate.Content), "second") {
		t.Error("live update shows output the command has not printed yet")
	}
	if !strings.Contains(contentText(live.ToolCallUpdate.Content), "test command c1") {
		t.Error("live update dropped the description")
	}
	release(t, h.ctx, gate)
	if r := h.await(done, "the prompt"); r.err != nil || r.resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r.resp, r.err)
	}
	txt, st := h.finalText(sid, "c1")
	if st != acpsdk.ToolCallStatusCompleted || !strings.Contains(txt, "```console\nfirst\nsecond\n```") {
		t.Errorf("final = %s %q", st, txt)
	}
	// No live update follows the final one.
	ups := toolUpdates(h.client.updatesOf(sid), "c1")
	if last := ups[len(ups)-1]; last.Status == nil || *last.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("last update of c1 is not the final one: %+v", last)
	}
}

// TestLiveOutputTerminal: with Zed's terminal_output capability the command
// is shown as a display-only terminal fed through _meta.
func TestLiveOutputTerminal(t *testing.T) {
	t.Parallel()
	gate := fifo(t)
	h := newHarness(t, harnessOptions{terminal: true, provider: script{"p": steps(bash("c1", "echo first; cat "+gate+" >/dev/null; echo second; exit 4"))}})
	sid, cwd := h.newSession(sessions.ModeAuto)
	done := h.promptAsync(sid, "p")

	start := h.client.waitUpdate(t, h.ctx, sid, "the tool call", func(u acpsdk.SessionUpdate) bool { return u.ToolCall != nil })
	var term *acpsdk.ToolCallContentTerminal
	for _, c := range start.ToolCall.Content {
		if c.Terminal != nil {
			term = c.Terminal
		}
	}
	if term == nil || term.TerminalId != "c1" {
		t.Errorf("tool_call content %+v lacks terminal c1", start.ToolCall.Content)
	}
	info, _ := start.ToolCall.Meta["terminal_info"].(map[string]any)
	if info["terminal_id"] != "c1" || info["cwd"] != cwd {
		t.Errorf("_meta.terminal_info = %v", info)
	}

	outputOf := func(u acpsdk.SessionUpdate) (string, bool) {
		tu := u.ToolCallUpdate
		if tu == nil || tu.ToolCallId != "c1" {
			return "", false
		}
		o, ok := tu.Meta["terminal_output"].(map[string]any)
		if !ok || o["terminal_id"] != "c1" {
			return "", false
		}
		d, _ := o["data"].(string)
		return d, true
	}
	h.client.waitUpdate(t, h.ctx, sid, "live terminal output", func(u acpsdk.SessionUpdate) bool {
		d, ok := outputOf(u)
		return ok && strings.Contains(d, "first\n")
	})
	release(t, h.ctx, gate)
	if r := h.await(done, "the prompt"); r.err != nil || r.resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r.resp, r.err)
	}
	var all strings.Builder
	var exit map[string]any
	for _, u := range h.client.updatesOf(sid) {
		if d, ok := outputOf(u); ok {
			if exit != nil {
				t.Error("terminal output after terminal_exit")
			}
			all.WriteString(d)
		}
		if tu := u.ToolCallUpdate; tu != nil && tu.ToolCallId == "c1" {
			if e, ok := tu.Meta["terminal_exit"].(map[string]any); ok {
				exit = e
				if tu.Status == nil || *tu.Status != acpsdk.ToolCallStatusFailed {
					t.Errorf("final status = %v, want failed for exit 4", tu.Status)
				}
			}
		}
	}
	if all.String() != "first\nsecond\n" {
		t.Errorf("terminal output = %q, want every byte once", all.String())
	}
	if exit == nil || exit["terminal_id"] != "c1" || exit["exit_code"] != float64(4) {
		t.Errorf("_meta.terminal_exit = %v, want exit_code 4", exit)
	}
}

// TestUpdatesDoNotBlockTheTurn: a reasoning-only answer still produces a
// thought chunk and ends the turn.
func TestReasoningOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{provider: agent.ProviderFunc(func(_ context.Context, _ agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		emit(agent.Delta{Reasoning: "hmm"})
		return agent.Response{Message: agent.Message{ReasoningContent: "hmm"}, FinishReason: agent.FinishStop}, nil
	})})
	sid, _ := h.newSession(sessions.ModeAsk)
	if resp, err := h.prompt(sid, "x"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", resp, err)
	}
	ups := h.client.updatesOf(sid)
	if len(ups) != 1 || ups[0].AgentThoughtChunk == nil || ups[0].AgentThoughtChunk.Content.Text.Text != "hmm" {
		t.Errorf("updates = %+v, want one agent_thought_chunk", ups)
	}
}
