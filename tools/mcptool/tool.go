package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Annotations are the server's hints about a tool. They are hints from a
// server the user chose, not guarantees.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	OpenWorld   bool
	Idempotent  bool
}

// ACP tool kinds an MCP tool maps to.
const (
	KindRead   = "read"
	KindDelete = "delete"
	KindFetch  = "fetch"
	KindOther  = "other"
)

// Tool is one tool of one server of one session, under its model-facing
// name. Values are immutable: a list_changed makes new ones.
type Tool struct {
	srv  *server
	name string
	def  toolDef
	// missing: a name of this session's server that it does not offer now
	// (see Servers.Lookup); a call is an error result naming the server.
	missing bool
}

// Name is the model-facing name, mcp__<server>__<tool> or its reduced form.
func (t *Tool) Name() string { return t.name }

// Description is the server's description of the tool (its title if it
// has none).
func (t *Tool) Description() string { return t.def.description }

// Schema is the server's input schema.
func (t *Tool) Schema() json.RawMessage {
	if t.def.schema == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return t.def.schema
}

// Server is the name of the tool's server, as configured.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// ToolName is the tool's name on its server ("" for a missing tool).
func (t *Tool) ToolName() string { return t.def.name }

// ToolTitle is the server's human title for the tool, if any.
func (t *Tool) ToolTitle() string { return t.def.title }

// Annotations are the server's hints.
func (t *Tool) Annotations() Annotations { return t.def.ann }

// Kind maps the annotations to an ACP tool kind: read-only → read,
// destructive → delete, open-world → fetch, else other. Read-only wins, as
// a read-only tool cannot be destructive.
func (t *Tool) Kind() string {
	switch a := t.def.ann; {
	case a.ReadOnly:
		return KindRead
	case a.Destructive:
		return KindDelete
	case a.OpenWorld:
		return KindFetch
	}
	return KindOther
}

// Title is `<server>: <tool>` and, when there are arguments, a short
// one-line summary of them: `fs: read_file (path: "/tmp/x", limit: 5)`.
func (t *Tool) Title(args json.RawMessage) string {
	tool := t.def.name
	if tool == "" {
		tool = t.name
	}
	title := t.srv.cfg.Name + ": " + tool
	if s := argSummary(args); s != "" {
		title += " (" + s + ")"
	}
	return title
}

// ApprovalKey is what --allow/--deny patterns and "always" name:
// mcp:<server>/<tool>, with the names as the server and the editor spell
// them (for a missing tool, the model-facing name stands in for the tool).
func (t *Tool) ApprovalKey() string {
	tool := t.def.name
	if tool == "" {
		tool = t.name
	}
	return "mcp:" + t.srv.cfg.Name + "/" + tool
}

// Outcome is the result of one call, independent of the tools package.
type Outcome struct {
	// Text is exactly what the model sees.
	Text string
	// IsError: the server flagged the result (isError), or the call failed
	// (server unavailable, timeout, abort, protocol error).
	IsError bool
	// Structured is the tool's structured result as JSON, the editor's
	// rawOutput: the result's structured content when the server sent one,
	// else its content blocks and isError (bounded); nil when the call got
	// no result at all.
	Structured json.RawMessage
	// Truncated: Text holds only the tail; SpillPath has all of it ("" if
	// the file could not be written).
	Truncated bool
	SpillPath string
	// Images are the result's image blocks.
	Images []tools.Image
}

// errOutcome is an error result; the text follows tool-text.md's
// `Error: <message>`.
func errOutcome(msg string) Outcome {
	return Outcome{Text: "Error: " + msg, IsError: true}
}

// Invoke calls the tool with the model's arguments (a JSON object; empty
// means {}). A server still starting is waited for first. It returns when
// the server answers, the call timeout passes,
// ctx ends (the SDK then sends notifications/cancelled and the call returns
// at once), or the server's connection breaks. Every failure is an error
// Outcome; none is a Go error.
func (t *Tool) Invoke(ctx context.Context, args json.RawMessage) Outcome {
	v := t.srv
	// A call that reaches a server still starting (a prompt sent right
	// after session/new) waits for the start, which StartTimeout bounds,
	// instead of failing.
	select {
	case <-v.started:
	case <-ctx.Done():
		return errOutcome("MCP tool call aborted")
	}
	if t.missing {
		// Looked up while the server was starting: it may offer it now.
		nt, _ := v.s.Lookup(t.name)
		if nt == nil || nt.missing || nt.srv != v {
			return t.missingOutcome()
		}
		t = nt
	}
	var arguments map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil || arguments == nil {
			return errOutcome("invalid arguments: expected a JSON object")
		}
	}
	cs, err := v.session()
	if err != nil {
		return errOutcome(err.Error())
	}
	defer v.track(tools.CallID(ctx))()
	timeout := v.s.opts.CallTimeout
	callCtx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	// Close cancels every call in flight.
	stop := context.AfterFunc(v.s.ctx, cancel)
	defer stop()

	res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.def.name, Arguments: arguments})
	if err != nil {
		return v.callError(ctx, callCtx, err)
	}
	out := Outcome{Text: resultText(res), IsError: res.IsError, Structured: structured(res), Images: resultImages(res)}
	return v.s.limit(out, t)
}

// callError is the outcome of a call that failed with err: aborted by the
// turn (ctx), timed out (callCtx), cut by Close, the server's error answer,
// or a broken transport, which names why the server went when it can.
func (v *server) callError(ctx, callCtx context.Context, err error) Outcome {
	switch {
	case ctx.Err() != nil:
		return errOutcome("MCP tool call aborted")
	case errors.Is(context.Cause(callCtx), errCallTimeout):
		return errOutcome(fmt.Sprintf("MCP server %q did not answer within %dms", v.cfg.Name, v.s.opts.CallTimeout.Milliseconds()))
	case v.s.ctx.Err() != nil:
		return errOutcome(fmt.Sprintf("MCP server %q: %v", v.cfg.Name, ErrClosed))
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		// Not an answer from the server but a broken transport: the run
		// goroutine may be recording why (an exit status); give it a moment
		// so the model reads the cause, not only "EOF".
		v.waitGone(ctx, v.s.opts.KillGrace)
		if _, serr := v.session(); serr != nil {
			return errOutcome(serr.Error())
		}
	}
	return errOutcome(fmt.Sprintf("MCP server %q: %v", v.cfg.Name, err))
}

var errCallTimeout = errors.New("mcp call timeout")

func (t *Tool) missingOutcome() Outcome {
	v := t.srv
	if _, err := v.session(); err != nil {
		return errOutcome(err.Error())
	}
	return errOutcome(fmt.Sprintf("MCP server %q has no tool named %q now", v.cfg.Name, t.name))
}

// limit keeps the last MaxResultBytes of a long text for the model and
// writes the whole text to a spill file, noting it the way bash does.
func (s *Servers) limit(o Outcome, t *Tool) Outcome {
	max := s.opts.MaxResultBytes
	if len(o.Text) <= max {
		return o
	}
	path := ""
	f, err := s.spillFile("mcp-" + sanitize(t.srv.cfg.Name))
	if err == nil {
		_, err = f.WriteString(o.Text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = removeFile(f.Name())
		} else {
			path = f.Name()
		}
	}
	if err != nil {
		s.opts.Logger.Warn("mcp spill file unavailable", zap.String("mcp_server", t.srv.cfg.Name), zap.Error(err))
	}
	o.Truncated, o.SpillPath = true, path
	o.Text = cutTail(o.Text, max) + "\n" + truncationNote(path)
	return o
}

// truncationNote is the line that names the spill file, as bash's.
func truncationNote(path string) string {
	if path == "" {
		path = "(unavailable)"
	}
	return "[output truncated; full output: " + path + "]"
}

// Summary bounds.
const (
	maxSummaryRunes = 80
	maxValueRunes   = 40
)

// argSummary renders the arguments object on one line, keys in the order
// the model wrote them: strings quoted, numbers and booleans as they are,
// objects and arrays as {…} and […]. Anything but an object yields "".
func argSummary(args json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	var parts []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%v: %s", k, valueSummary(raw)))
	}
	return oneLine(strings.Join(parts, ", "), maxSummaryRunes)
}

func valueSummary(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "{…}"
	case '[':
		return "[…]"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return string(raw)
		}
		return `"` + oneLine(s, maxValueRunes) + `"`
	}
	return string(raw)
}

// oneLine replaces control characters with spaces and cuts s to max runes
// with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max-1]), " ") + "…"
}
