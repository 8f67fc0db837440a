package scripted_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/scripted"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, nil)
}

func parse(t *testing.T, script string) *scripted.Provider {
	t.Helper()
	p, err := scripted.Parse(strings.NewReader(script), "test.jsonl")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// prompt is a request whose first user message carries tag (none when "").
func prompt(tag string, more ...agent.Message) agent.Request {
	content := "do the thing"
	if tag != "" {
		content = "do the thing [script:" + tag + "] please"
	}
	msgs := append([]agent.Message{{Role: agent.RoleSystem, Content: "sys [script:not-this-one]"}, {Role: agent.RoleUser, Content: content}}, more...)
	return agent.Request{Messages: msgs}
}

// collect runs one Stream and returns the deltas it emitted.
func collect(ctx context.Context, p agent.Provider, req agent.Request) ([]agent.Delta, agent.Response, error) {
	var ds []agent.Delta
	resp, err := p.Stream(ctx, req, func(d agent.Delta) { ds = append(ds, d) })
	return ds, resp, err
}

func TestTag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  agent.Request
		want string
	}{
		{name: "no messages", req: agent.Request{}, want: ""},
		{name: "no token", req: prompt(""), want: ""},
		{name: "token in first user message", req: prompt("alpha"), want: "alpha"},
		{
			name: "only the first user message counts",
			req: agent.Request{Messages: []agent.Message{
				{Role: agent.RoleUser, Content: "plain"},
				{Role: agent.RoleUser, Content: "[script:late]"},
			}},
			want: "",
		},
		{name: "first token wins", req: agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "[script:a-1] [script:b]"}}}, want: "a-1"},
		{name: "malformed token", req: agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "[script:has space]"}}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := scripted.Tag(tt.req); got != tt.want {
				t.Errorf("Tag = %q, want %q", got, tt.want)
			}
		})
	}
}

const twoSessions = `
# two sessions, interleaved in the file on purpose
{"tag":"a","text":"a one"}
{"tag":"b","text":"b one"}
{"tag":"b","text":"b two"}
{"tag":"a","text":"a two"}
// untagged
{"text":"plain one"}
`

func TestTagsHaveTheirOwnCursor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		order []string // tags in the order requests are made
	}{
		{name: "a first", order: []string{"a", "a", "b", "b", ""}},
		{name: "b first", order: []string{"b", "", "b", "a", "a"}},
		{name: "interleaved", order: []string{"b", "a", "b", "a", ""}},
	}
	want := map[string][]string{"a": {"a one", "a two"}, "b": {"b one", "b two"}, "": {"plain one"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := parse(t, twoSessions)
			got := map[string][]string{}
			for _, tag := range tt.order {
				_, resp, err := collect(testutil.Context(t), p, prompt(tag))
				if err != nil {
					t.Fatalf("Stream(tag %q): %v", tag, err)
				}
				got[tag] = append(got[tag], resp.Message.Content)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answers per tag (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConcurrentSessions(t *testing.T) {
	t.Parallel()
	const sessions, turns = 8, 5
	var script strings.Builder
	for turn := 1; turn <= turns; turn++ {
		for s := range sessions {
			fmt.Fprintf(&script, `{"tag":"s%d","text":"s%d turn %d","tool_calls":[{"name":"bash","arguments":{"n":%d}}]}`+"\n", s, s, turn, turn)
		}
	}
	p := parse(t, script.String())
	ctx := testutil.Context(t)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Go(func() {
			tag := fmt.Sprintf("s%d", s)
			for turn := 1; turn <= turns; turn++ {
				_, resp, err := collect(ctx, p, prompt(tag))
				if err != nil {
					errs <- err
					return
				}
				wantText := fmt.Sprintf("s%d turn %d", s, turn)
				wantID := fmt.Sprintf("call_%s_%d_1", tag, turn)
				if resp.Message.Content != wantText || resp.Message.ToolCalls[0].ID != wantID {
					errs <- fmt.Errorf("%s turn %d: got %q / %q, want %q / %q", tag, turn,
						resp.Message.Content, resp.Message.ToolCalls[0].ID, wantText, wantID)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestExhausted(t *testing.T) {
	t.Parallel()
	p := parse(t, twoSessions)
	ctx := testutil.Context(t)
	for range 2 {
		if _, _, err := collect(ctx, p, prompt("a")); err != nil {
			t.Fatalf("Stream: %v", err)
		}
	}
	for _, tc := range []struct{ tag, want string }{
		{"a", `script exhausted: no turn left for tag "a" (request #3)`},
		{"a", `script exhausted: no turn left for tag "a" (request #4)`},
		{"nope", `script exhausted: no turn left for tag "nope" (request #1)`},
	} {
		_, _, err := collect(ctx, p, prompt(tc.tag))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Stream(tag %q) error = %v, want %q", tc.tag, err, tc.want)
		}
		if !errors.Is(err, agent.ErrProvider) {
			t.Errorf("error %v does not wrap agent.ErrProvider", err)
		}
	}
	// Another tag is untouched by a's exhaustion.
	if _, resp, err := collect(ctx, p, prompt("b")); err != nil || resp.Message.Content != "b one" {
		t.Errorf("tag b after a ran out: %q, %v", resp.Message.Content, err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{name: "broken JSON", script: "# c\n{\"text\":\"ok\"}\n{\"text\": oops}\n", want: "test.jsonl:3: not a turn object"},
		{name: "unknown field", script: "\n\n{\"txt\":\"typo\"}", want: `test.jsonl:3: not a turn object: json: unknown field "txt"`},
		{name: "two values on a line", script: `{"text":"a"} {"text":"b"}`, want: "test.jsonl:1: more than one JSON value"},
		{name: "not an object", script: `["text"]`, want: "test.jsonl:1: not a turn object"},
		{name: "bad finish", script: `{"finish":"done"}`, want: `test.jsonl:1: finish "done"`},
		{name: "tool call without name", script: `{"tool_calls":[{"arguments":{}}]}`, want: "test.jsonl:1: tool_calls[0]: missing name"},
		{name: "error and hang", script: `{"error":"x","hang":true}`, want: `test.jsonl:1: a turn cannot both fail and "hang"`},
		{name: "bad tag", script: `{"tag":"two words"}`, want: `test.jsonl:1: tag "two words"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scripted.Parse(strings.NewReader(tt.script), "test.jsonl")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte("{\"text\":\"hi\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := scripted.Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, resp, err := collect(testutil.Context(t), p, prompt("")); err != nil || resp.Message.Content != "hi" {
		t.Errorf("Stream = %q, %v", resp.Message.Content, err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"text\":\"hi\"}\n{\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := scripted.Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Errorf("Load(bad) error = %v, want it to name %s:2", err, bad)
	}
	if _, err := scripted.Load(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want ErrNotExist", err)
	}
}

func TestTurns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		script     string
		wantDeltas []agent.Delta
		want       agent.Response
	}{
		{
			name:       "reasoning then text, word by word",
			script:     `{"reasoning":"Think hard.","text":"The answer is\n42."}`,
			wantDeltas: []agent.Delta{{Reasoning: "Think "}, {Reasoning: "hard."}, {Text: "The "}, {Text: "answer "}, {Text: "is\n"}, {Text: "42."}},
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "The answer is\n42.", ReasoningContent: "Think hard."},
				FinishReason: agent.FinishStop,
			},
		},
		{
			name: "tool call arguments: object, verbatim string, absent",
			script: `{"tag":"t","tool_calls":[` +
				`{"name":"bash","arguments":{"command": "ls -la",  "timeout_ms": 500}},` +
				`{"name":"bash","arguments":"{\"command\": \"unterminated"},` +
				`{"name":"bash_kill"}]}`,
			want: agent.Response{
				Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
					{ID: "call_t_1_1", Name: "bash", Arguments: `{"command":"ls -la","timeout_ms":500}`},
					{ID: "call_t_1_2", Name: "bash", Arguments: `{"command": "unterminated`},
					{ID: "call_t_1_3", Name: "bash_kill", Arguments: `{}`},
				}},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name:   "untagged ids say default",
			script: `{"tool_calls":[{"name":"bash","arguments":{}}]}`,
			want: agent.Response{
				Message:      agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_default_1_1", Name: "bash", Arguments: `{}`}}},
				FinishReason: agent.FinishToolCalls,
			},
		},
		{
			name:       "explicit finish length",
			script:     `{"text":"cut","finish":"length"}`,
			wantDeltas: []agent.Delta{{Text: "cut"}},
			want:       agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "cut"}, FinishReason: agent.FinishLength},
		},
		{
			name:   "empty turn",
			script: `{}`,
			want:   agent.Response{Message: agent.Message{Role: agent.RoleAssistant}, FinishReason: agent.FinishStop},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := parse(t, tt.script)
			deltas, got, err := collect(testutil.Context(t), p, prompt(tagOf(tt.script)))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// tagOf is the tag of a one-line script (for table cases that set one).
func tagOf(script string) string {
	var v struct{ Tag string }
	_ = json.Unmarshal([]byte(script), &v)
	return v.Tag
}

func TestErrorTurn(t *testing.T) {
	t.Parallel()
	p := parse(t, `{"text":"partial answer","error":"the model is overloaded"}`+"\n"+`{"text":"recovered"}`)
	ctx := testutil.Context(t)
	deltas, _, err := collect(ctx, p, prompt(""))
	if err == nil || err.Error() != "the model is overloaded" || !errors.Is(err, agent.ErrProvider) {
		t.Fatalf("error = %v, want %q wrapping agent.ErrProvider", err, "the model is overloaded")
	}
	if diff := cmp.Diff([]agent.Delta{{Text: "partial "}, {Text: "answer"}}, deltas); diff != "" {
		t.Errorf("deltas before the error (-want +got):\n%s", diff)
	}
	if _, resp, err := collect(ctx, p, prompt("")); err != nil || resp.Message.Content != "recovered" {
		t.Errorf("next turn = %q, %v; the error turn should use up one turn", resp.Message.Content, err)
	}
}

func TestHangUntilCancel(t *testing.T) {
	t.Parallel()
	p := parse(t, `{"text":"thinking…","hang":true}`+"\n"+`{"text":"after"}`)
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	started := make(chan struct{})
	type result struct {
		resp agent.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := p.Stream(ctx, prompt(""), func(agent.Delta) {
			select {
			case <-started:
			default:
				close(started)
			}
		})
		done <- result{resp, err}
	}()
	<-started
	select {
	case r := <-done:
		t.Fatalf("a hang turn returned before the cancel: %+v", r)
	default:
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", r.err)
	}
	if errors.Is(r.err, agent.ErrProvider) {
		t.Errorf("a cancel is not a provider failure: %v", r.err)
	}
	// A request on an already-cancelled context uses up no turn.
	if _, _, err := collect(ctx, p, prompt("")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request error = %v, want context.Canceled", err)
	}
	if _, resp, err := collect(testutil.Context(t), p, prompt("")); err != nil || resp.Message.Content != "after" {
		t.Errorf("next turn = %q, %v; want %q", resp.Message.Content, err, "after")
	}
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	inner := parse(t, twoSessions)
	rec := scripted.NewRecorder(inner, &buf)
	ctx := testutil.Context(t)

	history := []agent.Message{{Role: agent.RoleAssistant, Content: "a one"}, {Role: agent.RoleUser, Content: "next"}}
	reqs := []agent.Request{
		prompt("a"),
		prompt("a", history...),
		{
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "no tag"}},
			Tools:    []agent.ToolSpec{{Name: "bash", Description: "run", Parameters: json.RawMessage(`{"type":"object"}`)}},
		},
		prompt("ghost"), // exhausted at once: still recorded
	}
	for i, req := range reqs {
		_, _, err := collect(ctx, rec, req)
		if (err != nil) != (i == 3) {
			t.Fatalf("request %d: err = %v", i, err)
		}
	}
	var got []scripted.Record
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var r scripted.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, r)
	}
	want := []scripted.Record{
		{Tag: "a", Request: reqs[0]},
		{Tag: "a", Request: reqs[1]},
		{Tag: "", Request: reqs[2]},
		{Tag: "ghost", Request: reqs[3]},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded lines (-want +got):\n%s", diff)
	}
}

// lockedWriter fails the test if two writes overlap and checks each write
// is exactly one line.
type lockedWriter struct {
	t *testing.T
	// mu is held only with TryLock: contention means the recorder let two
	// writes overlap.
	mu    sync.Mutex
	lines [][]byte
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	if !w.mu.TryLock() {
		w.t.Error("overlapping writes")
		return len(p), nil
	}
	defer w.mu.Unlock()
	if bytes.Count(p, []byte("\n")) != 1 || p[len(p)-1] != '\n' {
		w.t.Errorf("write is not one whole line: %q", p)
	}
	w.lines = append(w.lines, append([]byte(nil), p...))
	return len(p), nil
}

func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	const sessions, turns = 8, 20
	var script strings.Builder
	for s := range sessions {
		for range turns {
			fmt.Fprintf(&script, `{"tag":"s%d","text":"%s"}`+"\n", s, strings.Repeat("x", 4096))
		}
	}
	w := &lockedWriter{t: t}
	rec := scripted.NewRecorder(parse(t, script.String()), w)
	ctx := testutil.Context(t)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			for range turns {
				if _, _, err := collect(ctx, rec, prompt(fmt.Sprintf("s%d", s), agent.Message{Role: agent.RoleUser, Content: strings.Repeat("y", 4096)})); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	perTag := map[string]int{}
	for _, line := range w.lines {
		var r scripted.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line does not decode: %v", err)
		}
		perTag[r.Tag]++
	}
	for s := range sessions {
		if n := perTag[fmt.Sprintf("s%d", s)]; n != turns {
			t.Errorf("tag s%d: %d lines, want %d", s, n, turns)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRecorderWriteFailure(t *testing.T) {
	t.Parallel()
	called := false
	inner := agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		called = true
		return agent.Response{}, nil
	})
	_, err := scripted.NewRecorder(inner, failingWriter{}).Stream(testutil.Context(t), prompt(""), func(agent.Delta) {})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error = %v, want the write failure", err)
	}
	if called {
		t.Error("the inner provider ran although the request could not be recorded")
	}
}

// "$LAST_TASK" in a call's arguments is the task the session's tool results
// last reported started; with none it stays as written.
func TestLastTask(t *testing.T) {
	p := parse(t, `{"tool_calls":[{"name":"bash_output","arguments":{"task_id":"$LAST_TASK"}}]}
{"tool_calls":[{"name":"bash_output","arguments":{"task_id":"$LAST_TASK"}}]}`)
	started := func(id string) agent.Message {
		return agent.Message{Role: agent.RoleTool, Content: "started background task " + id + " (its output: bash_output)"}
	}
	req := prompt("", started("bash-3"), agent.Message{Role: agent.RoleUser, Content: "started background task bash-9"}, started("bash-12"))
	ctx := testutil.Context(t)
	_, resp, err := collect(ctx, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.ToolCalls[0].Arguments, `{"task_id":"bash-12"}`; got != want {
		t.Errorf("arguments %s, want %s", got, want)
	}
	if _, resp, err = collect(ctx, p, prompt("")); err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.ToolCalls[0].Arguments, `{"task_id":"$LAST_TASK"}`; got != want {
		t.Errorf("with no task started: arguments %s, want %s", got, want)
	}
}
