package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bashCall is one scripted model turn of session tag calling bash.
func bashCall(tag, command string) string {
	b, _ := json.Marshal(map[string]any{"tag": tag, "tool_calls": []any{map[string]any{"name": "bash", "arguments": map[string]any{"command": command, "description": "Run it"}}}})
	return string(b)
}

// answer replies to an agent→client request.
func (p *proc) answer(id any, result any) {
	p.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// promptAsked prompts sid and returns each permission request's options as
// they come, answering each with choose(options); it returns the prompt's
// result once it ends.
func (p *proc) promptAsked(ctx context.Context, sid, text string, choose func([]any) string) (asked int) {
	p.t.Helper()
	id := p.send("session/prompt", promptParams(sid, text))
	p.await(ctx, "prompt "+text, func(m map[string]any) bool {
		if m["method"] == "session/request_permission" {
			asked++
			params := m["params"].(map[string]any)
			p.answer(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": choose(params["options"].([]any))}})
			return false
		}
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	return asked
}

// TestProjectRule: "Always allow in this project" in one session lets a
// later session in the same project (another directory of the same git
// repository) run the command without asking; a session in another
// project is still asked. dsh-acp rules lists and removes the rule, which
// lives in the state directory, not the repository.
func TestProjectRule(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := t.TempDir()
	repo := t.TempDir()
	sub := filepath.Join(repo, "pkg")
	other := t.TempDir()
	for _, d := range []string{filepath.Join(repo, ".git"), sub} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	script := writeScript(t,
		bashCall("a", "echo first"), `{"tag":"a","text":"ok"}`,
		bashCall("b", "echo second"), `{"tag":"b","text":"ok"}`,
		bashCall("c", "echo third"), `{"tag":"c","text":"ok"}`,
	)
	cmd := exec.Command(binPath, "--script", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_STATE_DIR=" + state}
	p := startCmd(t, cmd)
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	newSession := func(cwd string) string {
		return p.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["sessionId"].(string)
	}
	var label string
	asked := p.promptAsked(ctx, newSession(repo), "[script:a] go", func(options []any) string {
		for _, o := range options {
			o := o.(map[string]any)
			if o["optionId"] == "allow_always_project" {
				label = o["name"].(string)
				return "allow_always_project"
			}
		}
		t.Errorf("no project option among %v", options)
		return "reject_once"
	})
	if asked != 1 || label != "Always allow `echo` commands in this project" {
		t.Fatalf("first session: asked %d times, project option %q", asked, label)
	}
	reject := func([]any) string { return "reject_once" }
	if n := p.promptAsked(ctx, newSession(sub), "[script:b] go", reject); n != 0 {
		t.Errorf("a second session in the same project was asked %d times", n)
	}
	if n := p.promptAsked(ctx, newSession(other), "[script:c] go", reject); n != 1 {
		t.Errorf("a session in another project was asked %d times, want 1", n)
	}
	if entries, _ := os.ReadDir(repo); len(entries) != 2 {
		t.Errorf("the repository gained files: %v", entries)
	}

	getenv := func(k string) string {
		if k == "DSH_STATE_DIR" {
			return state
		}
		return ""
	}
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"rules"}, nil, &out, &errb, getenv); code != 0 || !strings.Contains(out.String(), "1  echo     "+repo) {
		t.Fatalf("rules: exit %d\n%s%s", code, out.String(), errb.String())
	}
	listed := out.String()
	out.Reset()
	if code := run(ctx, []string{"rules", "list"}, nil, &out, &errb, getenv); code != 0 || out.String() != listed {
		t.Errorf("rules list: exit %d %q, want what rules printed %q (%s)", code, out.String(), listed, errb.String())
	}
	out.Reset()
	if code := run(ctx, []string{"rules", "rm", "2"}, nil, &out, &errb, getenv); code != 1 || !strings.Contains(errb.String(), "no rule 2") {
		t.Errorf("rules rm 2: exit %d %s", code, errb.String())
	}
	if code := run(ctx, []string{"rules", "rm", "1"}, nil, &out, &errb, getenv); code != 0 {
		t.Fatalf("rules rm 1: exit %d %s", code, errb.String())
	}
	out.Reset()
	if code := run(ctx, []string{"rules"}, nil, &out, &errb, getenv); code != 0 || !strings.HasPrefix(out.String(), "no project rules") {
		t.Errorf("rules after rm: exit %d %q", code, out.String())
	}
}
