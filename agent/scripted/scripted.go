// Package scripted is an agent.Provider that replays canned model turns from
// a file: offline runs (dsh-acp --script FILE), the newcomer tour and golden
// transcript tests. NewRecorder is its counterpart for --script-record.
//
// # Format
//
// JSON Lines, one model turn per line. Blank lines and lines starting with
// "#" or "//" are ignored. Every field is optional:
//
//	tag         string   which session the turn belongs to (default "")
//	reasoning   string   thinking text, streamed first as Reasoning deltas
//	text        string   answer text, streamed next as Text deltas (word by word)
//	tool_calls  array    of {"name": string, "arguments": any JSON value};
//	                     an object (or array, number …) is sent as its compact
//	                     JSON text, a string is sent verbatim (so a script can
//	                     send malformed arguments), absent means "{}";
//	                     "$LAST_TASK" in them is replaced by the id of the
//	                     background task the session's tool results last
//	                     reported started (the tour reads its job with it)
//	finish      string   "stop" | "length" | "tool_calls"; default tool_calls
//	                     when there are tool calls, else stop
//	error       string   after streaming reasoning/text, fail with this message
//	                     (wrapping agent.ErrProvider)
//	hang        bool     after streaming reasoning/text, block until the
//	                     request's context is cancelled, then return its error
//	context_exceeded bool  fail as an endpoint does when the request exceeds
//	                     the context window (the error wraps
//	                     agent.ErrContextExceeded); "error" may give the text
//	usage       object   {"prompt_tokens": N, "completion_tokens": M}: the
//	                     usage the endpoint reports for this turn; absent
//	                     means the endpoint reports none
//
// A compaction's summary request is an ordinary turn of its session: its
// "text" is the summary. After a compaction the model no longer sees the
// first prompt, only the summary in its place, so a tagged session's summary
// text must repeat "[script:NAME]" for its later requests to keep the tag.
//
// Example:
//
//	# session "build" (its first prompt contains [script:build])
//	{"tag":"build","reasoning":"Run make.","tool_calls":[{"name":"bash","arguments":{"command":"make"}}]}
//	{"tag":"build","text":"The build passed."}
//	// a session whose prompt carries no tag
//	{"text":"Hello!"}
//	{"tool_calls":[{"name":"bash","arguments":"{not json"}]}
//	{"error":"the model is overloaded"}
//
// # Tags
//
// A request's tag is NAME from the first "[script:NAME]" in its first user
// message (NAME is letters, digits, '_', '-', '.'), or "" when there is none.
// Each tag has its own cursor: the n-th request with tag X gets X's n-th
// turn, so concurrent sessions replay deterministically whichever runs first.
// Tool call ids are "call_<tag>_<turn>_<call>" (tag "" is written
// "default"; turn and call count from 1).
package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// turn is one parsed line of a script.
type turn struct {
	reasoning string
	text      string
	calls     []call
	finish    agent.FinishReason
	err       string
	hang      bool
	exceeded  bool
	usage     agent.Usage
}

type call struct {
	name      string
	arguments string
}

// Provider replays a script. It is safe for concurrent use.
type Provider struct {
	name  string
	turns map[string][]turn

	// mu guards next, the per-tag count of requests served so far.
	mu   sync.Mutex
	next map[string]int
}

var _ agent.Provider = (*Provider)(nil)

// Load reads the script at path; see the package documentation for the
// format. Errors name path:line.
func Load(path string) (*Provider, error) {
	// As untrusted opens files: a FIFO named as the script would block
	// the agent's start until a writer came.
	f, err := untrusted.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err // it names the path; the caller says it was the script
	}
	defer f.Close()
	return Parse(f, path)
}

// maxLine bounds one script line; a turn is a model answer, not a data dump.
const maxLine = 16 << 20

// Parse reads a script from r. name labels errors (name:line: …).
func Parse(r io.Reader, name string) (*Provider, error) {
	p := &Provider{name: name, turns: make(map[string][]turn), next: make(map[string]int)}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine)
	for line := 1; sc.Scan(); line++ {
		s := bytes.TrimSpace(sc.Bytes())
		if len(s) == 0 || s[0] == '#' || bytes.HasPrefix(s, []byte("//")) {
			continue
		}
		tag, t, err := parseTurn(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		p.turns[tag] = append(p.turns[tag], t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read script %s: %w", name, err)
	}
	return p, nil
}

// scriptTurn is one line of a script as written.
type scriptTurn struct {
	Tag       string `json:"tag"`
	Reasoning string `json:"reasoning"`
	Text      string `json:"text"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	Finish   string `json:"finish"`
	Error    string `json:"error"`
	Hang     bool   `json:"hang"`
	Exceeded bool   `json:"context_exceeded"`
	Usage    *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func parseTurn(line []byte) (string, turn, error) {
	var raw scriptTurn
	dec := json.NewDecoder(bytes.NewReader(line))
	// A misspelt field in a hand-written script should fail loudly, not
	// silently replay a turn without it.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return "", turn{}, fmt.Errorf("not a turn object: %w", err)
	}
	if dec.More() {
		return "", turn{}, errors.New("more than one JSON value on the line (one turn per line)")
	}
	if raw.Tag != "" && !tagName().MatchString(raw.Tag) {
		return "", turn{}, fmt.Errorf("tag %q: use letters, digits, '_', '-' or '.'", raw.Tag)
	}
	if (raw.Error != "" || raw.Exceeded) && raw.Hang {
		return "", turn{}, errors.New(`a turn cannot both fail and "hang"`)
	}
	t := turn{reasoning: raw.Reasoning, text: raw.Text, err: raw.Error, hang: raw.Hang, exceeded: raw.Exceeded}
	if u := raw.Usage; u != nil {
		if u.PromptTokens < 0 || u.CompletionTokens < 0 {
			return "", turn{}, errors.New("usage: token counts cannot be negative")
		}
		t.usage = agent.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			TotalTokens: u.PromptTokens + u.CompletionTokens, Reported: true}
	}
	var err error
	if t.calls, err = raw.calls(); err != nil {
		return "", turn{}, err
	}
	if t.finish, err = raw.finish(len(t.calls) > 0); err != nil {
		return "", turn{}, err
	}
	return raw.Tag, t, nil
}

// calls are the line's tool calls; nil when none.
func (raw scriptTurn) calls() ([]call, error) {
	var out []call
	for i, c := range raw.ToolCalls {
		if c.Name == "" {
			return nil, fmt.Errorf("tool_calls[%d]: missing name", i)
		}
		args, err := argumentsText(c.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool_calls[%d] arguments: %w", i, err)
		}
		out = append(out, call{name: c.Name, arguments: args})
	}
	return out, nil
}

// finish is the line's finish reason; none written is "tool_calls" for a
// turn with calls, else "stop".
func (raw scriptTurn) finish(calls bool) (agent.FinishReason, error) {
	switch raw.Finish {
	case "":
		if calls {
			return agent.FinishToolCalls, nil
		}
		return agent.FinishStop, nil
	case string(agent.FinishStop), string(agent.FinishLength), string(agent.FinishToolCalls), string(agent.FinishContentFilter):
		return agent.FinishReason(raw.Finish), nil
	}
	return "", fmt.Errorf(`finish %q: want "stop", "length", "tool_calls" or "content_filter"`, raw.Finish)
}

// argumentsText turns a script's arguments value into the text a model
// would have sent: a JSON string verbatim, anything else as compact JSON.
func argumentsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// The scripts' patterns are compiled at first use, not at package
// initialisation: this package is linked into every process of the binary
// (the agent, each session's zygote, the watchdog), scripted or not.
var (
	tagName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })
	tagToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[script:([A-Za-z0-9_.-]+)\]`) })
)

// Tag is the script tag of req: NAME from the first "[script:NAME]" in its
// first user message, or "" when there is none.
func Tag(req agent.Request) string {
	for _, m := range req.Messages {
		if m.Role != agent.RoleUser {
			continue
		}
		if sub := tagToken().FindStringSubmatch(m.Content); sub != nil {
			return sub[1]
		}
		return ""
	}
	return ""
}

// Stream replays the next turn for req's tag; see agent.Provider.
func (p *Provider) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	// A request cancelled before it started must not use up a turn, or the
	// rest of that session's script would be off by one.
	if err := ctx.Err(); err != nil {
		return agent.Response{}, fmt.Errorf("scripted model: %w", err)
	}
	tag := Tag(req)
	p.mu.Lock()
	n := p.next[tag] + 1 // 1-based request number for this tag
	p.next[tag] = n
	p.mu.Unlock()

	turns := p.turns[tag]
	if n > len(turns) {
		return agent.Response{}, &scriptError{fmt.Sprintf("script exhausted: no turn left for tag %q (request #%d)", tag, n)}
	}
	t := turns[n-1]

	for _, piece := range pieces(t.reasoning) {
		if err := ctx.Err(); err != nil {
			return agent.Response{}, fmt.Errorf("scripted model: %w", err)
		}
		emit(agent.Delta{Reasoning: piece})
	}
	for _, piece := range pieces(t.text) {
		if err := ctx.Err(); err != nil {
			return agent.Response{}, fmt.Errorf("scripted model: %w", err)
		}
		emit(agent.Delta{Text: piece})
	}
	switch {
	case t.exceeded:
		msg := t.err
		if msg == "" {
			msg = "This model's maximum context length is exceeded (scripted)"
		}
		return agent.Response{}, fmt.Errorf("%w: %w", agent.ErrContextExceeded, &scriptError{msg})
	case t.err != "":
		return agent.Response{}, &scriptError{t.err}
	case t.hang:
		<-ctx.Done()
		return agent.Response{}, fmt.Errorf("scripted model (tag %q, request #%d hangs): %w", tag, n, ctx.Err())
	}

	msg := agent.Message{Role: agent.RoleAssistant, Content: t.text, ReasoningContent: t.reasoning}
	idTag := tag
	if idTag == "" {
		idTag = "default"
	}
	for i, c := range t.calls {
		msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{
			ID:        fmt.Sprintf("call_%s_%d_%d", idTag, n, i+1),
			Name:      c.name,
			Arguments: strings.ReplaceAll(c.arguments, lastTask, lastTaskID(req.Messages)),
		})
	}
	return agent.Response{Message: msg, FinishReason: t.finish, Usage: t.usage}, nil
}

// lastTask in a call's arguments stands for the id of the background task
// the session started last: ids run on across sessions and restarts (a
// stored session's tasks keep theirs), so a script cannot know it.
const lastTask = "$LAST_TASK"

// startedTask finds a started task's id in a tool result.
var startedTask = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`started background task (bash-[0-9]+)`) })

// lastTaskID is the id the newest tool result of msgs reports started, or
// lastTask itself when none does (the call then names no task, as written).
func lastTaskID(msgs []agent.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != agent.RoleTool {
			continue
		}
		if m := startedTask().FindStringSubmatch(msgs[i].Content); m != nil {
			return m[1]
		}
	}
	return lastTask
}

// pieces splits s into words, each keeping the whitespace after it, so the
// pieces concatenate to s and a consumer sees several deltas as it would
// from a real model.
func pieces(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexFunc(s, isSpace)
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && isSpace(rune(s[j])) {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

func isSpace(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '\r' }

// scriptError is a scripted model failure: its text is the script's own
// message, and it wraps agent.ErrProvider as a real provider's would.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }
func (e *scriptError) Unwrap() error { return agent.ErrProvider }
