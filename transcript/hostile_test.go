package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestHostileInputOverTheBinary: the inputs that used to make dsh-acp exit
// (issue 9), written to the real binary's stdin as a client would write
// them; after each, a prompt in another session still works, and at the
// end the binary exits 0 when its stdin closes. Not a golden: the frames
// are megabytes long.
func TestHostileInputOverTheBinary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	script := strings.Repeat(`{"tag":"B","text":"ok"}`+"\n", 8) +
		`{"tag":"big","text":"read it"}` + "\n" +
		`{"tag":"H","hang":true}` + "\n"
	scriptPath := filepath.Join(root, "script.jsonl")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A window that holds the 6 MB prompt below: one that does not fit is
	// refused whole (a prompt is never summarized).
	cmd := exec.Command(binPath, "--script", scriptPath, "--context-window", "8000000", "--log-file", filepath.Join(root, "dsh-acp.log"), "--log-level", "debug")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"), "GORACE=halt_on_error=1"}
	cmd.SysProcAttr = dieWithParent()
	// Written by exec's copier while diag may read it.
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		cancel()
		for range lines {
		}
	})
	diag := func() string {
		log, _ := os.ReadFile(filepath.Join(root, "dsh-acp.log"))
		return fmt.Sprintf("stderr:\n%s\nlog (tail):\n%s", stderr.String(), tail(string(log), 3000))
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatalf("write to the agent: %v\n%s", err, diag())
		}
	}
	type reply struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	// recv returns the reply with id, skipping notifications.
	recv := func(id string) reply {
		t.Helper()
		for {
			select {
			case b, ok := <-lines:
				if !ok {
					t.Fatalf("the agent exited (waiting for the reply to %s)\n%s", id, diag())
				}
				if !utf8.Valid(b) || !json.Valid(b) {
					t.Fatalf("the agent wrote a line that is not JSON text: %q", b)
				}
				var r reply
				_ = json.Unmarshal(b, &r)
				if len(r.ID) == 0 {
					continue
				}
				if string(r.ID) != id {
					t.Fatalf("reply %s, want id %s", b, id)
				}
				return r
			case <-ctx.Done():
				t.Fatalf("timed out waiting for the reply to %s\n%s", id, diag())
			}
		}
	}
	newSession := func(id string) string {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, id, root))
		var res struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(recv(id).Result, &res); err != nil || res.SessionID == "" {
			t.Fatalf("session/new: %v", err)
		}
		return res.SessionID
	}
	encode := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as Zed writes '<', '>' and '&'
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	prompt := func(id, sid string, blocks ...any) string {
		return encode(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "session/prompt",
			"params": map[string]any{"sessionId": sid, "prompt": blocks}})
	}
	textBlock := func(s string) any { return map[string]any{"type": "text", "text": s} }
	n := 100
	promptB := func(sid string) {
		t.Helper()
		n++
		id := fmt.Sprint(n)
		send(prompt(id, sid, textBlock("[script:B] still there?")))
		if r := recv(id); !strings.Contains(string(r.Result), `"end_turn"`) {
			t.Fatalf("prompt in the other session: %s %+v", r.Result, r.Error)
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	recv("1")
	a, b, h := newSession("2"), newSession("3"), newSession("4")

	// JSON-RPC lets a request leave out params; every param of
	// session/list is optional.
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":"list-%d","method":"session/list"}`,
		`{"jsonrpc":"2.0","id":"list-%d","method":"session/list","params":null}`,
	} {
		id := fmt.Sprintf(`"list-%d"`, i)
		send(fmt.Sprintf(frame, i))
		if r := recv(id); r.Error != nil || !strings.Contains(string(r.Result), `"sessions":[`) {
			t.Errorf("session/list without params: %+v %s", r.Error, r.Result)
		}
	}

	// A valid frame of exactly 10,485,760 bytes.
	head := `{"jsonrpc":"2.0","id":"huge","method":"session/new","params":{"cwd":"/","mcpServers":[]}`
	send(head + strings.Repeat(" ", 10<<20-len(head)-1) + "}")
	if r := recv(`"huge"`); r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("frame of the SDK's limit: %+v, want -32600", r.Error)
	}
	promptB(b)

	// A 6 MB HTML file as a resource, as Zed sends an @-mentioned file.
	row := `<tr><td>a &amp; b</td><td><a href="/x?y=1&z=2">&lt;x&gt;</a></td></tr>` + "\n"
	html := "<html><body><table>\n" + strings.Repeat(row, (6<<20)/len(row)) + "</table></body></html>\n"
	send(prompt(`"html"`, a, textBlock("[script:big] what is in it?"),
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///page.html", "mimeType": "text/html", "text": html}}))
	if r := recv(`"html"`); !strings.Contains(string(r.Result), `"end_turn"`) {
		t.Errorf("6 MB HTML prompt: %s %+v, want end_turn", r.Result, r.Error)
	}
	promptB(b)

	// 1,500 extension notifications in one write.
	send(strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","method":"_x/ping","params":{}}`+"\n", 1500), "\n"))
	promptB(b)

	// Ids that are not a string, a number or null; a frame that is not UTF-8.
	for _, id := range []string{`[7]`, `{}`, `true`} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, id))
		if r := recv("null"); r.Error == nil || r.Error.Code != -32600 {
			t.Errorf("id %s: %+v, want -32600", id, r.Error)
		}
	}
	send("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}")
	if r := recv("null"); r.Error == nil || r.Error.Code != -32700 {
		t.Errorf("invalid UTF-8: %+v, want -32700", r.Error)
	}
	promptB(b)

	// An escaped session\/prompt cancelled by session\u002fcancel while the
	// model hangs (Neovim's encoder writes "\/").
	send(strings.Replace(prompt("50", h, textBlock("[script:H] wait")), `"session/prompt"`, `"session\/prompt"`, 1))
	send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session\u002fcancel","params":{"sessionId":%q}}`, h))
	if r := recv("50"); !strings.Contains(string(r.Result), `"cancelled"`) {
		t.Errorf("escaped cancel: %s %+v, want cancelled", r.Result, r.Error)
	}
	promptB(b)

	stdin.Close()
	for range lines {
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the agent exited with %v\n%s", err, diag())
		}
	case <-ctx.Done():
		t.Fatalf("the agent did not exit after its stdin closed\n%s", diag())
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
