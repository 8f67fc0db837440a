package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/execclient"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// runJSON runs the binary's exec --json and returns its events (every
// stdout line, each of which must be a JSON object with a type), the exit
// code and stderr.
func runJSON(t *testing.T, env []string, args ...string) ([]map[string]any, int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(testutil.Context(t), binPath, append([]string{"exec", "--json"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var evs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line %d is not a JSON object: %q (%v)", i+1, line, err)
		}
		if typ, _ := ev["type"].(string); typ == "" {
			t.Errorf("stdout line %d has no type: %q", i+1, line)
		}
		if _, has := ev["version"]; has != (i == 0) {
			t.Errorf("line %d: version present %v (only the first has it): %q", i+1, has, line)
		}
		evs = append(evs, ev)
	}
	return evs, code, errb.String()
}

// ofType is the events of type typ.
func ofType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// joined is the text of the chunks of type typ.
func joined(evs []map[string]any, typ string) string {
	var b strings.Builder
	for _, e := range ofType(evs, typ) {
		b.WriteString(e["text"].(string))
	}
	return b.String()
}

// TestExecJSON: exec --json prints only JSON events on stdout — the
// session first (with the format's version), the thought and message
// chunks, the tool call, its live output and its end with the diff, the
// permission question and who answered it, the plan, the end with the
// stop reason and the same exit status as without --json.
func TestExecJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t,
		`{"reasoning":"think first","text":"Editing.\n","tool_calls":[{"name":"bash","arguments":{"command":"sed -i.bak s/two/TWO/ f.txt && rm f.txt.bak && echo edited","description":"Edit the file"}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"plan":[{"step":"edit f.txt","status":"completed"}]}}]}`,
		`{"text":"Done."}`)
	env := []string{"DSH_STATE_DIR=" + t.TempDir()}

	evs, code, errb := runJSON(t, env, "--script", script, "--yes", "--cwd", dir, "edit it")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	if first := evs[0]; first["type"] != "session" || first["version"] != float64(execclient.JSONVersion) || first["cwd"] != dir || first["session_id"] == "" || first["resumed"] != false {
		t.Errorf("first event %v", first)
	}
	if th := joined(evs, "thought"); th != "think first" {
		t.Errorf("thoughts %q", th)
	}
	if msg := joined(evs, "message"); msg != "Editing.\nDone." {
		t.Errorf("message text %q", msg)
	}
	calls := ofType(evs, "tool_call")
	if len(calls) != 1 || calls[0]["kind"] != "execute" || calls[0]["description"] != "Edit the file" || calls[0]["input"].(map[string]any)["command"] == nil {
		t.Fatalf("tool calls %v", calls)
	}
	id := calls[0]["id"]
	if q := ofType(evs, "permission"); len(q) != 1 || q[0]["id"] != id || len(q[0]["options"].([]any)) == 0 {
		t.Errorf("permission events %v", q)
	}
	if a := ofType(evs, "permission_answer"); len(a) != 1 || a[0]["by"] != "yes" || a[0]["kind"] != "allow_once" {
		t.Errorf("answers %v", a)
	}
	if o := ofType(evs, "tool_output"); len(o) == 0 || o[0]["id"] != id || o[0]["data"] != "edited\n" {
		t.Errorf("output events %v", o)
	}
	var end map[string]any
	for _, u := range ofType(evs, "tool_call_update") {
		if u["status"] == "completed" {
			end = u
		}
	}
	diffs, _ := end["diffs"].([]any)
	if end["exit_code"] != float64(0) || len(diffs) != 1 {
		t.Fatalf("the call's end %v", end)
	}
	d := diffs[0].(map[string]any)
	if d["path"] != filepath.Join(dir, "f.txt") || d["old_text"] != "one\ntwo\n" || d["new_text"] != "one\nTWO\n" || !strings.Contains(d["unified"].(string), "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n") {
		t.Errorf("diff %v", d)
	}
	if p := ofType(evs, "plan"); len(p) != 1 || p[0]["entries"].([]any)[0].(map[string]any)["step"] != "edit f.txt" {
		t.Errorf("plan %v", p)
	}
	if last := evs[len(evs)-1]; last["type"] != "end" || last["stop_reason"] != "end_turn" || last["exit_code"] != float64(0) {
		t.Errorf("last event %v", last)
	}

	// Without --yes and a terminal: refused, exit 4 as without --json, and
	// the answer says no one was asked.
	evs, code, _ = runJSON(t, env, "--script", script, "--cwd", dir, "edit it")
	if a := ofType(evs, "permission_answer"); code != 4 || len(a) != 1 || a[0]["by"] != "no_terminal" || a[0]["kind"] != "reject_once" {
		t.Errorf("exit %d, answers %v", code, a)
	}
	if last := evs[len(evs)-1]; last["type"] != "end" || last["exit_code"] != float64(4) {
		t.Errorf("last event %v", last)
	}

	// A run that fails ends with the error in its end event, exit 1.
	evs, code, _ = runJSON(t, env, "--script", filepath.Join(dir, "no-such-script"), "--cwd", dir, "x")
	if last := evs[len(evs)-1]; code != 1 || last["type"] != "end" || last["exit_code"] != float64(1) || !strings.Contains(last["error"].(string), "no-such-script") {
		t.Errorf("exit %d, events %v", code, evs)
	}
}

// TestExecJSONCommandOfSeveralLines: a command of two lines is titled by
// its first; the whole command is the events' "command", beside the
// description.
func TestExecJSONCommandOfSeveralLines(t *testing.T) {
	t.Parallel()
	script := writeScript(t, bashCall("", "echo hello\necho world"), `{"text":"Done."}`)
	evs, code, errb := runJSON(t, []string{"DSH_STATE_DIR=" + t.TempDir()}, "--script", script, "--yes", "--cwd", t.TempDir(), "greet")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	calls, asked := ofType(evs, "tool_call"), ofType(evs, "permission")
	if len(calls) != 1 || calls[0]["title"] != "echo hello (+1 more line)" || calls[0]["command"] != "echo hello\necho world" || calls[0]["description"] != "Run it" {
		t.Errorf("tool calls %v", calls)
	}
	if len(asked) != 1 || asked[0]["title"] != "echo hello (+1 more line)" || asked[0]["command"] != "echo hello\necho world" {
		t.Errorf("permission events %v", asked)
	}
}

// TestExecJSONUsage: the turn's tokens and cost from a real endpoint are
// a usage event before the end.
func TestExecJSONUsage(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.DeepSeek})
	evs, code, errb := runJSON(t, nil, "--no-persist", "--base-url", m.URL, "--cwd", t.TempDir(), "hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	u := ofType(evs, "usage")
	if len(u) != 1 || u[0]["input_tokens"] == nil || u[0]["output_tokens"] == nil || u[0]["cost"].(map[string]any)["currency"] != "USD" {
		t.Fatalf("usage events %v", u)
	}
	if evs[len(evs)-2]["type"] != "usage" || evs[len(evs)-1]["type"] != "end" {
		t.Errorf("the usage event is not right before the end: %v", evs)
	}
}
