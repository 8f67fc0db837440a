package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
)

const rejectedText = "Error: permission denied: the user rejected this command; it was not run"

// modelSaw records the tool result the model was told for call id at the
// second step, then ends the turn.
type modelSaw struct {
	mu   sync.Mutex
	seen map[string]string
}

func (m *modelSaw) turn(first agent.Response, id string) turnFunc {
	return func(_ context.Context, step int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		if step == 0 {
			return first, nil
		}
		res, _ := toolResult(req, id)
		m.mu.Lock()
		if m.seen == nil {
			m.seen = map[string]string{}
		}
		m.seen[id] = res
		m.mu.Unlock()
		return text("after " + id), nil
	}
}

func (m *modelSaw) get(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[id]
}

func TestPermissionRequestAndReject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		command     string
		wantOptions []string
		// alwaysNames are substrings the "always" option's name must show.
		alwaysNames []string
		// title is the request's title; empty: the command.
		title string
		// content is what the request's content shows, its text blocks
		// joined by "|"; empty: it has none.
		content string
	}{
		{
			name: "subcommand tools", command: "go test ./... && git status",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"`go test`", "`git status`"},
		},
		{
			name: "plain program", command: "ls -la",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"`ls`"},
		},
		{
			// Remembering `echo` can never pass this very line again; the
			// option still exists and its name says so.
			name: "substitution line says it is still asked", command: "echo $(cat secret)",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"Always allow plain `echo` commands in this session"},
			content:     "“Always” remembers plain `echo` commands: a line that sets variables, writes files, substitutes commands or uses shell constructs such as functions or here-documents, as this one does, is still asked.",
		},
		{
			name: "file write says it is still asked", command: "ls -la > listing.txt",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"plain `ls`"},
			content:     "“Always” remembers plain `ls` commands: a line that sets variables, writes files, substitutes commands or uses shell constructs such as functions or here-documents, as this one does, is still asked.",
		},
		{
			// The case: joined into one line, the second command
			// read as arguments of the first. The title says a line
			// follows; the content shows every line.
			name: "two lines", command: "echo hello\nrm -f important.txt",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"Always allow `echo`, `rm` commands in this session"},
			title:       "echo hello (+1 more line)",
			content:     "```sh\necho hello\nrm -f important.txt\n```",
		},
		{
			// The name stays short enough for one line; the content names
			// every program.
			name: "many programs", command: "cat a; head b; tail c; sort d; uniq e; wc f; grep g h",
			wantOptions: []string{"allow_once/allow_once", "allow_always/allow_always", "reject_once/reject_once"},
			alwaysNames: []string{"Always allow `cat`, `head`, `tail` and 4 more commands in this session"},
			content:     "“Always” remembers `cat`, `head`, `tail`, `sort`, `uniq`, `wc`, `grep` commands.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var saw modelSaw
			h := newHarness(t, harnessOptions{
				provider: script{"p": saw.turn(bash("c1", tt.command), "c1")},
				onPermission: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
					return selected("reject_once"), nil
				},
			})
			sid, _ := h.newSession(sessions.ModeAsk)
			resp, err := h.prompt(sid, "p")
			if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %+v, %v; want end_turn (the turn goes on after a reject)", resp, err)
			}
			perms := h.client.permsOf(sid)
			if len(perms) != 1 {
				t.Fatalf("%d permission requests, want 1", len(perms))
			}
			p := perms[0]
			var opts []string
			var always string
			for _, o := range p.Options {
				opts = append(opts, string(o.Kind)+"/"+string(o.OptionId))
				if o.Name == "" {
					t.Errorf("option %s has no name", o.OptionId)
				}
				if o.Kind == acpsdk.PermissionOptionKindAllowAlways {
					always = o.Name
				}
			}
			if diff := cmp.Diff(tt.wantOptions, opts); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			for _, n := range tt.alwaysNames {
				if !strings.Contains(always, n) {
					t.Errorf("always option %q does not show %s", always, n)
				}
			}
			for _, o := range p.Options {
				if n := utf8.RuneCountInString(o.Name); n > 72 {
					t.Errorf("option name of %d characters, more than a line shows: %q", n, o.Name)
				}
			}
			var content []string
			for _, c := range p.ToolCall.Content {
				if c.Content != nil && c.Content.Content.Text != nil {
					content = append(content, c.Content.Content.Text.Text)
				}
			}
			// The content restates the call's description (the editor
			// shows it in place of the call's own).
			want := ""
			if tt.content != "" {
				want = "test command c1|" + tt.content
			}
			if got := strings.Join(content, "|"); got != want {
				t.Errorf("request content %q, want %q", got, want)
			}
			title := tt.command
			if tt.title != "" {
				title = tt.title
			}
			if string(p.ToolCall.ToolCallId) != "c1" || p.ToolCall.Title == nil || *p.ToolCall.Title != title ||
				p.ToolCall.Kind == nil || *p.ToolCall.Kind != acpsdk.ToolKindExecute {
				t.Errorf("request's tool call = %+v, want c1, the command as title, kind execute", p.ToolCall)
			}
			if got := saw.get("c1"); got != rejectedText {
				t.Errorf("model was told %q, want %q", got, rejectedText)
			}
			txt, st := h.finalText(sid, "c1")
			if st != acpsdk.ToolCallStatusFailed || !strings.Contains(txt, rejectedText) {
				t.Errorf("final update = %s %q, want failed with the rejection", st, txt)
			}
			for _, u := range toolUpdates(h.client.updatesOf(sid), "c1") {
				if u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress {
					t.Error("a rejected call was shown running")
				}
			}
		})
	}
}

func TestAllowAlwaysIsRememberedPerSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{
		provider: script{
			"A1": steps(bash("c1", "git status")),
			"A2": steps(bash("c2", "git status --short")),
			"A3": steps(bash("c3", "git log -1")),
			"B1": steps(bash("c1", "git status")),
		},
		onPermission: func(_ context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			if *r.ToolCall.Title == "git status" {
				return selected("allow_always"), nil
			}
			return selected("allow_once"), nil
		},
	})
	a, _ := h.newSession(sessions.ModeAsk)
	b, _ := h.newSession(sessions.ModeAsk)
	for _, step := range []struct {
		sid    acpsdk.SessionId
		prompt string
	}{{a, "A1"}, {a, "A2"}, {a, "A3"}, {b, "B1"}} {
		if resp, err := h.prompt(step.sid, step.prompt); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("%s = %+v, %v", step.prompt, resp, err)
		}
	}
	titles := func(sid acpsdk.SessionId) []string {
		var out []string
		for _, p := range h.client.permsOf(sid) {
			out = append(out, *p.ToolCall.Title)
		}
		return out
	}
	if diff := cmp.Diff([]string{"git status", "git log -1"}, titles(a)); diff != "" {
		t.Errorf("session A was asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"git status"}, titles(b)); diff != "" {
		t.Errorf("session B was asked (-want +got):\n%s", diff)
	}
	// The remembered command really ran.
	for _, u := range toolUpdates(h.client.updatesOf(a), "c2") {
		if u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress {
			return
		}
	}
	t.Error("git status --short never ran")
}

func TestRulesAndModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mode    sessions.Mode
		rules   permission.Rules
		command string
		// args, if set, are the raw arguments instead of {command, description}.
		args string
		// wantAsked: a permission request is sent (and rejected).
		wantAsked bool
		wantRun   bool
		// wantTold is a substring of what the model is told.
		wantTold string
	}{
		{name: "auto runs without asking", mode: sessions.ModeAuto, command: "rm -f victim", wantRun: true, wantTold: "(no output)"},
		{name: "deny vetoes in auto", mode: sessions.ModeAuto, rules: permission.Rules{Deny: []string{"rm"}}, command: "rm -f victim", wantTold: `deny rule "rm"`},
		{name: "deny vetoes in ask without asking", mode: sessions.ModeAsk, rules: permission.Rules{Deny: []string{"rm"}}, command: "echo x && rm -f victim", wantTold: `deny rule "rm"`},
		{name: "deny beats allow", mode: sessions.ModeAsk, rules: permission.Rules{Allow: []string{"rm"}, Deny: []string{"rm -f"}}, command: "rm -f victim", wantTold: `deny rule "rm -f"`},
		{name: "allow passes in ask", mode: sessions.ModeAsk, rules: permission.Rules{Allow: []string{"rm"}}, command: "rm -f victim", wantRun: true, wantTold: "(no output)"},
		{name: "allow does not pass a chained command", mode: sessions.ModeAsk, rules: permission.Rules{Allow: []string{"echo"}}, command: "echo hi; rm -f victim", wantAsked: true, wantTold: rejectedText},
		{name: "ask asks", mode: sessions.ModeAsk, command: "rm -f victim", wantAsked: true, wantTold: rejectedText},
		// The check must read the very property the tool runs: JSON object
		// keys are case-sensitive, encoding/json's struct matching is not.
		{
			name: "deny sees the command the tool runs", mode: sessions.ModeAuto, rules: permission.Rules{Deny: []string{"rm"}},
			args: `{"command":"rm -f victim","description":"d","Command":"true"}`, wantTold: `deny rule "rm"`,
		},
		{
			name: "allow sees the command the tool runs", mode: sessions.ModeAsk, rules: permission.Rules{Allow: []string{"echo"}},
			args: `{"command":"rm -f victim","description":"d","COMMAND":"echo hi"}`, wantAsked: true, wantTold: rejectedText,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var saw modelSaw
			first := bash("c1", tt.command)
			if tt.args != "" {
				first.Message.ToolCalls[0].Arguments = tt.args
			}
			h := newHarness(t, harnessOptions{
				provider: script{"p": saw.turn(first, "c1")},
				rules:    tt.rules,
			})
			sid, cwd := h.newSession(tt.mode)
			victim := filepath.Join(cwd, "victim")
			if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if resp, err := h.prompt(sid, "p"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %+v, %v", resp, err)
			}
			if asked := len(h.client.permsOf(sid)) > 0; asked != tt.wantAsked {
				t.Errorf("asked = %v, want %v", asked, tt.wantAsked)
			}
			_, err := os.Stat(victim)
			if ran := os.IsNotExist(err); ran != tt.wantRun {
				t.Errorf("command ran = %v, want %v", ran, tt.wantRun)
			}
			if got := saw.get("c1"); !strings.Contains(got, tt.wantTold) {
				t.Errorf("model was told %q, want it to contain %q", got, tt.wantTold)
			}
		})
	}
}

func TestTaskToolsNeverAsk(t *testing.T) {
	t.Parallel()
	var saw modelSaw
	taskID := func(req agent.Request) string {
		res, _ := toolResult(req, "start")
		f := strings.Fields(res)
		if len(f) == 0 {
			return "missing"
		}
		return f[len(f)-1]
	}
	h := newHarness(t, harnessOptions{
		provider: script{"p": func(_ context.Context, step int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
			switch step {
			case 0:
				return bash("start", "exec sleep 1000", "run_in_background", true), nil
			case 1:
				return call("read", "bash_output", map[string]any{"task_id": taskID(req)}), nil
			case 2:
				return call("kill", "bash_kill", map[string]any{"task_id": taskID(req)}), nil
			}
			for _, id := range []string{"start", "read", "kill"} {
				res, _ := toolResult(req, id)
				saw.mu.Lock()
				if saw.seen == nil {
					saw.seen = map[string]string{}
				}
				saw.seen[id] = res
				saw.mu.Unlock()
			}
			return text("done"), nil
		}},
		onPermission: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			return selected("allow_once"), nil
		},
	})
	sid, _ := h.newSession(sessions.ModeAsk)
	if resp, err := h.prompt(sid, "p"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", resp, err)
	}
	var titles []string
	for _, p := range h.client.permsOf(sid) {
		titles = append(titles, *p.ToolCall.Title)
	}
	if diff := cmp.Diff([]string{"exec sleep 1000"}, titles); diff != "" {
		t.Errorf("permission requests (-want +got):\n%s", diff)
	}
	if got := saw.get("read"); !strings.Contains(got, "[status: running]") {
		t.Errorf("bash_output told %q", got)
	}
	if got := saw.get("kill"); !strings.HasPrefix(got, "killed background task bash-") {
		t.Errorf("bash_kill told %q", got)
	}
}

// TestUnattendedRefusal: a client that refuses because no one could be
// asked says so in the answer's _meta ("unattended"), and the model is
// told that — not that the user rejected the command.
func TestUnattendedRefusal(t *testing.T) {
	t.Parallel()
	const unattended = "Error: permission denied: it was not run: no one could be asked to approve it (dsh-acp exec without a terminal); do not retry it: tell the user what you wanted to run and why"
	var saw modelSaw
	h := newHarness(t, harnessOptions{
		provider: script{"p": saw.turn(bash("c1", "rm -f victim"), "c1")},
		onPermission: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			r := selected("reject_once")
			r.Meta = map[string]any{"unattended": true}
			return r, nil
		},
	})
	sid, _ := h.newSession(sessions.ModeAsk)
	if _, err := h.prompt(sid, "p"); err != nil {
		t.Fatal(err)
	}
	if got := saw.get("c1"); got != unattended {
		t.Errorf("model was told %q, want %q", got, unattended)
	}
}
