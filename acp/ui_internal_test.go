package acp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestFenced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "hello\n", want: "```console\nhello\n```"},
		{name: "adds the final newline", in: "hello", want: "```console\nhello\n```"},
		{name: "output with a fence", in: "```go\nx\n```\n", want: "````console\n```go\nx\n```\n````"},
		{name: "longer runs", in: "a ```` b", want: "`````console\na ```` b\n`````"},
		{name: "empty", in: "", want: "```console\n\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fenced(tt.in)
			if got.Content == nil || got.Content.Content.Text == nil || got.Content.Content.Text.Text != tt.want {
				t.Errorf("fenced(%q) = %+v, want %q", tt.in, got.Content, tt.want)
			}
		})
	}
}

func TestValidUTF8Prefix(t *testing.T) {
	t.Parallel()
	euro := []byte("€") // 3 bytes
	tests := []struct {
		name string
		in   []byte
		want int
	}{
		{name: "ascii", in: []byte("abc"), want: 3},
		{name: "whole rune", in: append([]byte("a"), euro...), want: 4},
		{name: "split rune", in: append([]byte("a"), euro[:2]...), want: 1},
		{name: "first byte only", in: append([]byte("ab"), euro[:1]...), want: 2},
		{name: "empty", in: nil, want: 0},
	}
	for _, tt := range tests {
		if got := len(validUTF8Prefix(tt.in)); got != tt.want {
			t.Errorf("%s: prefix length %d, want %d", tt.name, got, tt.want)
		}
	}
}

type recordingClient struct {
	updates []acpsdk.SessionUpdate
}

func (c *recordingClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.updates = append(c.updates, n.Update)
	return nil
}

func (c *recordingClient) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{}, nil
}

// TestTerminalFlushSplitRune: a rune split across two reads reaches the
// terminal whole, and the bytes before it are not damaged.
func TestTerminalFlushSplitRune(t *testing.T) {
	c := &recordingClient{}
	u := newTurnUI(c, "s", true, intervalTicker(time.Hour), context.Background(), zap.NewNop())
	info := agent.CallInfo{ID: "call", Call: tools.Call{Live: true}}
	lc := &liveCall{info: info, out: newLiveOutput(liveTail), sentLineEnd: true}
	u.live[info.ID] = lc
	u.output(info.ID, tools.Chunk{Stream: "stdout", Data: []byte("caf\xc3")})
	u.flush(lc)
	u.output(info.ID, tools.Chunk{Stream: "stdout", Data: []byte("\xa9 ok\n")})
	u.flush(lc)
	var got []string
	for _, up := range c.updates {
		out := up.ToolCallUpdate.Meta["terminal_output"].(map[string]any)
		got = append(got, out["data"].(string))
	}
	if diff := cmp.Diff([]string{"caf", "é ok\n"}, got); diff != "" {
		t.Errorf("terminal data (-want +got):\n%s", diff)
	}
}

// TestTerminalFinishNotes: with Zed's terminal, the final update keeps the
// terminal and adds only what it cannot show: a timeout, a spill path.
func TestTerminalFinishNotes(t *testing.T) {
	u := newTurnUI(&recordingClient{}, "s", true, intervalTicker(time.Hour), context.Background(), zap.NewNop())
	c := agent.CallInfo{ID: "call", Call: tools.Call{Live: true}}
	ran := &liveCall{info: c, out: newLiveOutput(liveTail)}

	timedOut := u.finishCall(c, tools.Result{
		Text:   "partial\n[output truncated; full output: /spill/x]\n[timed out after 100ms]\n[killed by signal: SIGTERM]",
		Failed: true,
		Exit:   &tools.Exit{Signal: "SIGTERM"},
		Notes:  []string{"[output truncated; full output: /spill/x]", "[timed out after 100ms]"},
	}, ran).ToolCallUpdate
	if len(timedOut.Content) != 2 || timedOut.Content[0].Terminal == nil {
		t.Fatalf("content = %+v, want the terminal then the notes", timedOut.Content)
	}
	notes := timedOut.Content[1].Content.Content.Text.Text
	if want := "```console\n[output truncated; full output: /spill/x]\n[timed out after 100ms]\n```"; notes != want {
		t.Errorf("notes = %q, want %q", notes, want)
	}
	wantExit := map[string]any{"terminal_id": "call", "exit_code": nil, "signal": "SIGTERM"}
	if diff := cmp.Diff(wantExit, timedOut.Meta["terminal_exit"]); diff != "" {
		t.Errorf("terminal_exit (-want +got):\n%s", diff)
	}
	if timedOut.Status == nil || *timedOut.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("status = %v, want failed", timedOut.Status)
	}

	plain := u.finishCall(c, tools.Result{Text: "ok\n", Exit: &tools.Exit{Code: new(int)}}, ran).ToolCallUpdate
	if plain.Content != nil {
		t.Errorf("a plain run replaced the terminal content: %+v", plain.Content)
	}

	// The notes are the tool's, never read back from the text: output that
	// looks like a marker is only output.
	lookalike := u.finishCall(c, tools.Result{Text: "[timed out after 5ms]\n[output truncated; full output: /x]\n", Exit: &tools.Exit{Code: new(int)}}, ran).ToolCallUpdate
	if lookalike.Content != nil || *lookalike.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("marker-like output became notes: %+v, status %v", lookalike.Content, *lookalike.Status)
	}
	if got := lookalike.Meta["terminal_exit"].(map[string]any)["exit_code"]; got != 0 {
		t.Errorf("exit_code = %v, want 0", got)
	}
}

// TestFinishRawOutput: the raw output is the tool's value as it built it;
// a result without one sends none.
func TestFinishRawOutput(t *testing.T) {
	u := newTurnUI(&recordingClient{}, "s", false, intervalTicker(time.Hour), context.Background(), zap.NewNop())
	c := agent.CallInfo{ID: "call", Call: tools.Call{Title: "t"}}
	ran := &liveCall{info: c, out: newLiveOutput(liveTail)}
	raw := map[string]any{"anything": []any{"the", "tool", "says"}}
	got := u.finishCall(c, tools.Result{Text: "x", Raw: raw}, ran).ToolCallUpdate
	if diff := cmp.Diff(any(raw), got.RawOutput); diff != "" {
		t.Errorf("rawOutput (-want +got):\n%s", diff)
	}
	if *got.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("status %v, want completed", *got.Status)
	}
	none := u.finishCall(c, tools.Result{Text: "x", IsError: true}, ran).ToolCallUpdate
	if none.RawOutput != nil || *none.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("rawOutput %#v, status %v; want none, failed", none.RawOutput, *none.Status)
	}
}

func TestRawInputClipsLongStrings(t *testing.T) {
	long := strings.Repeat("é", maxRawString) // two bytes each
	got := rawInput(`{"command":"` + long + `","n":[1,"x"]}`).(map[string]any)
	cmd := got["command"].(string)
	if len(cmd) > maxRawString+64 || !strings.HasSuffix(cmd, " more bytes]") || !utf8.ValidString(cmd) {
		t.Errorf("command clipped to %d bytes, valid UTF-8 %v, tail %q", len(cmd), utf8.ValidString(cmd), cmd[len(cmd)-20:])
	}
	if diff := cmp.Diff([]any{1.0, "x"}, got["n"]); diff != "" {
		t.Errorf("other values changed:\n%s", diff)
	}
	if raw := rawInput("{not json " + long).(string); len(raw) > maxRawString+64 {
		t.Errorf("malformed arguments not clipped: %d bytes", len(raw))
	}
}

// TestTerminalFinishChanges: with Zed's terminal, what a command changed
// follows the terminal (and the notes), with its locations.
func TestTerminalFinishChanges(t *testing.T) {
	u := newTurnUI(&recordingClient{}, "s", true, intervalTicker(time.Hour), context.Background(), zap.NewNop())
	c := agent.CallInfo{ID: "call", Call: tools.Call{Live: true}}
	ran := &liveCall{info: c, out: newLiveOutput(liveTail)}
	old, line := "a\n", 0
	r := tools.Result{Text: "(no output)", Exit: &tools.Exit{Code: new(int)},
		Changes: []tools.Change{
			{Path: "/p/f.txt", OldText: &old, NewText: "b\n"},
			{Path: "/p/new.txt", NewText: "n\n"},
			{Path: "/p/x.bin", Line: "/p/x.bin: binary file created"},
		},
		Locations: []tools.Location{{Path: "/p/f.txt", Line: &line}, {Path: "/p/new.txt", Line: &line}, {Path: "/p/x.bin"}},
	}
	got := u.finishCall(c, r, ran).ToolCallUpdate
	if len(got.Content) != 4 || got.Content[0].Terminal == nil {
		t.Fatalf("content = %+v, want the terminal then three changes", got.Content)
	}
	if d := got.Content[1].Diff; d == nil || d.Path != "/p/f.txt" || d.OldText == nil || *d.OldText != "a\n" || d.NewText != "b\n" {
		t.Errorf("first change = %+v, want the diff of f.txt", got.Content[1])
	}
	if d := got.Content[2].Diff; d == nil || d.OldText != nil || d.NewText != "n\n" {
		t.Errorf("second change = %+v, want a new file without oldText", got.Content[2])
	}
	if l := got.Content[3].Content; l == nil || l.Content.Text == nil || l.Content.Text.Text != "/p/x.bin: binary file created" {
		t.Errorf("third change = %+v, want the binary file's line", got.Content[3])
	}
	want := []acpsdk.ToolCallLocation{{Path: "/p/f.txt", Line: &line}, {Path: "/p/new.txt", Line: &line}, {Path: "/p/x.bin"}}
	if diff := cmp.Diff(want, got.Locations); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
}

// TestChangeNotUTF8: a changed file whose name is not UTF-8 is not sent
// as a diff or a location (JSON would turn its bad bytes into U+FFFD, a
// path that names no file): a line names it, bytes escaped, and says the
// editor cannot open it.
func TestChangeNotUTF8(t *testing.T) {
	u := newTurnUI(&recordingClient{}, "s", false, intervalTicker(time.Hour), context.Background(), zap.NewNop())
	c := agent.CallInfo{ID: "call"}
	line := 0
	r := tools.Result{Text: "(no output)",
		Changes:   []tools.Change{{Path: "/p/dir\xff/inner.txt", NewText: "n\n"}, {Path: "/p/ok.txt", NewText: "o\n"}},
		Locations: []tools.Location{{Path: "/p/dir\xff/inner.txt", Line: &line}, {Path: "/p/ok.txt", Line: &line}},
	}
	got := u.finishCall(c, r, nil).ToolCallUpdate
	var lines []string
	for _, cc := range got.Content {
		if cc.Diff != nil && !utf8.ValidString(cc.Diff.Path) {
			t.Errorf("a diff of a path that is not UTF-8: %q", cc.Diff.Path)
		}
		if cc.Content != nil && cc.Content.Content.Text != nil {
			lines = append(lines, cc.Content.Content.Text.Text)
		}
	}
	if !slices.Contains(lines, "/p/dir⟨\\xff⟩/inner.txt: changed (its name is not UTF-8, so the editor cannot open it)") {
		t.Errorf("no line names the file: %q", lines)
	}
	want := []acpsdk.ToolCallLocation{{Path: "/p/ok.txt", Line: &line}}
	if diff := cmp.Diff(want, got.Locations); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
}
