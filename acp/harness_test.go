package acp_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
	"github.com/dsh-acp/dsh-acp/turn"
)

func TestMain(m *testing.M) {
	testutil.Main(m, mcpChildMain)
}

// testLogger is zaptest's logger that goes quiet once the test's cleanups
// ran: the SDK's goroutines may log "connection closed" after Serve
// returned, and logging to a finished test panics.
func testLogger(t *testing.T) *zap.Logger {
	w := &quietAfter{t: t}
	t.Cleanup(w.stop) // registered first, so it runs last
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), zapcore.DebugLevel)
	return zap.New(core, zap.AddCaller())
}

type quietAfter struct {
	t *testing.T
	// mu guards done; Write holds it while it logs.
	mu   sync.Mutex
	done bool
}

func (q *quietAfter) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.done {
		q.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (q *quietAfter) stop() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
}

var _ = zaptest.NewLogger // zaptest's level and writer conventions, made safe above

// ---------------------------------------------------------------------------
// The fake model: scripted per prompt text.

// turnFunc answers the step-th model request (0-based) of a turn.
type turnFunc func(ctx context.Context, step int, req agent.Request, emit func(agent.Delta)) (agent.Response, error)

// script is a provider that finds the turn by its prompt text: the last user
// message that names a scripted prompt; the step is the number of assistant
// messages after it. Stateless, so concurrent sessions share it safely.
type script map[string]turnFunc

func (s script) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != agent.RoleUser {
			continue
		}
		f, ok := s[m.Content]
		if !ok {
			continue
		}
		step := 0
		for _, later := range req.Messages[i+1:] {
			if later.Role == agent.RoleAssistant {
				step++
			}
		}
		return f(ctx, step, req, emit)
	}
	return agent.Response{}, fmt.Errorf("%w: no script for this prompt", agent.ErrProvider)
}

// steps plays fixed responses in order, then ends the turn with "done".
func steps(rs ...agent.Response) turnFunc {
	return func(_ context.Context, step int, _ agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		if step < len(rs) {
			return rs[step], nil
		}
		return text("done"), nil
	}
}

func text(s string) agent.Response {
	return agent.Response{Message: agent.Message{Content: s}, FinishReason: agent.FinishStop}
}

// bash asks for one bash call.
func bash(id, command string, extra ...any) agent.Response {
	args := map[string]any{"command": command, "description": "test command " + id}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return call(id, "bash", args)
}

func call(id, name string, args map[string]any) agent.Response {
	b, _ := json.Marshal(args)
	return agent.Response{
		Message:      agent.Message{ToolCalls: []agent.ToolCall{{ID: id, Name: name, Arguments: string(b)}}},
		FinishReason: agent.FinishToolCalls,
	}
}

// toolResult returns the content of the tool message answering id, if the
// request carries it.
func toolResult(req agent.Request, id string) (string, bool) {
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool && m.ToolCallID == id {
			return m.Content, true
		}
	}
	return "", false
}

// ---------------------------------------------------------------------------
// The editor: the SDK's client side, recording what it is sent.

type testClient struct {
	// onPermission answers session/request_permission; nil rejects.
	onPermission func(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)

	// mu guards the fields below.
	mu      sync.Mutex
	updates []acpsdk.SessionNotification
	perms   []acpsdk.RequestPermissionRequest
	// changed is closed and replaced whenever something is recorded.
	changed chan struct{}
}

func newTestClient() *testClient { return &testClient{changed: make(chan struct{})} }

func (c *testClient) record(f func()) {
	c.mu.Lock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *testClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.record(func() { c.updates = append(c.updates, n) })
	return nil
}

func (c *testClient) RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.record(func() { c.perms = append(c.perms, r) })
	if c.onPermission == nil {
		return selected("reject_once"), nil
	}
	return c.onPermission(ctx, r)
}

func selected(id string) acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(id))}
}

func (c *testClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound("fs/read_text_file")
}

func (c *testClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound("fs/write_text_file")
}

func (c *testClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/create")
}

func (c *testClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/kill")
}

func (c *testClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound("terminal/output")
}

func (c *testClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/release")
}

func (c *testClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound("terminal/wait_for_exit")
}

// waitUntil blocks until cond holds over what was recorded, or fails the
// test when ctx ends.
func (c *testClient) waitUntil(t *testing.T, ctx context.Context, what string, cond func(updates []acpsdk.SessionNotification, perms []acpsdk.RequestPermissionRequest) bool) {
	t.Helper()
	for {
		c.mu.Lock()
		ok := cond(c.updates, c.perms)
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitUpdate waits for a session/update of sid that matches pred.
func (c *testClient) waitUpdate(t *testing.T, ctx context.Context, sid acpsdk.SessionId, what string, pred func(acpsdk.SessionUpdate) bool) acpsdk.SessionUpdate {
	t.Helper()
	var found acpsdk.SessionUpdate
	c.waitUntil(t, ctx, what, func(ups []acpsdk.SessionNotification, _ []acpsdk.RequestPermissionRequest) bool {
		for _, n := range ups {
			if n.SessionId == sid && pred(n.Update) {
				found = n.Update
				return true
			}
		}
		return false
	})
	return found
}

// updatesOf returns the session's turn updates: without the session-level
// ones (title, config options, mode, the commands announced after
// session/new) and the usage after each response, which allUpdatesOf
// includes.
func (c *testClient) updatesOf(sid acpsdk.SessionId) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, u := range c.allUpdatesOf(sid) {
		if u.SessionInfoUpdate == nil && u.ConfigOptionUpdate == nil && u.CurrentModeUpdate == nil &&
			u.AvailableCommandsUpdate == nil && u.UsageUpdate == nil {
			out = append(out, u)
		}
	}
	return out
}

func (c *testClient) allUpdatesOf(sid acpsdk.SessionId) []acpsdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []acpsdk.SessionUpdate
	for _, n := range c.updates {
		if n.SessionId == sid {
			out = append(out, n.Update)
		}
	}
	return out
}

func (c *testClient) permsOf(sid acpsdk.SessionId) []acpsdk.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []acpsdk.RequestPermissionRequest
	for _, p := range c.perms {
		if p.SessionId == sid {
			out = append(out, p)
		}
	}
	return out
}

// toolUpdates returns the tool_call_update notifications of one call.
func toolUpdates(ups []acpsdk.SessionUpdate, id string) []*acpsdk.SessionToolCallUpdate {
	var out []*acpsdk.SessionToolCallUpdate
	for _, u := range ups {
		if u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == id {
			out = append(out, u.ToolCallUpdate)
		}
	}
	return out
}

// isFinal matches the completed/failed update of tool call id.
func isFinal(id string) func(acpsdk.SessionUpdate) bool {
	return func(u acpsdk.SessionUpdate) bool {
		tu := u.ToolCallUpdate
		return tu != nil && string(tu.ToolCallId) == id && tu.Status != nil &&
			(*tu.Status == acpsdk.ToolCallStatusCompleted || *tu.Status == acpsdk.ToolCallStatusFailed)
	}
}

// isStatus matches an update of tool call id to status st.
func isStatus(id string, st acpsdk.ToolCallStatus) func(acpsdk.SessionUpdate) bool {
	return func(u acpsdk.SessionUpdate) bool {
		tu := u.ToolCallUpdate
		return tu != nil && string(tu.ToolCallId) == id && tu.Status != nil && *tu.Status == st
	}
}

// contentText joins the text blocks of tool call content.
func contentText(cs []acpsdk.ToolCallContent) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// asJSON decodes v's wire form into generic JSON for shape checks.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ---------------------------------------------------------------------------
// The harness: an Agent served over io.Pipe pairs to the SDK's client side.

type harnessOptions struct {
	provider agent.Provider
	rules    permission.Rules
	// tools replaces the real bash tools when set.
	tools []tools.Tool
	// onPermission answers permission requests.
	onPermission func(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
	// terminal announces clientCapabilities._meta.terminal_output.
	terminal bool
	// noInit skips initialize.
	noInit bool
	// ticks, if set, is the clock of every running command's live updates:
	// output is sent only at a tick the test sends, and when the command
	// ends.
	ticks chan time.Time
	// tap, if set, is told every chunk of live output once the agent has it.
	tap func(tools.Chunk)
	// store persists the sessions; nil means memory only.
	store *store.Store
	// models lists the model option's values; nil means the default only.
	models acp.ModelLister
	// mcp configures the sessions' MCP servers (a short kill grace is
	// added when zero).
	mcp turn.MCPOptions
	// contextWindow is the loop's context window; zero means the default.
	contextWindow int
	// model is the configured model; empty means "test-model".
	model string
	// thinking is --thinking.
	thinking string
}

type harness struct {
	t      *testing.T
	ctx    context.Context
	agent  *acp.Agent
	reg    *sessions.Registry
	conn   *acpsdk.ClientSideConnection
	client *testClient
	init   acpsdk.InitializeResponse
	// toAgent is the agent's stdin; closing it is a disconnect.
	toAgent io.Closer
	// served is closed when the agent's Serve has returned.
	served <-chan struct{}
}

// newAgent builds an Agent over the real local executor and bash tools (or
// o.tools). Cleanups close the tools and the executor, which waits until
// every process group it started is gone.
func newAgent(t *testing.T, o harnessOptions) (*acp.Agent, *sessions.Registry) {
	t.Helper()
	log := testLogger(t)
	limits := executor.Limits{KillGrace: 200 * time.Millisecond, LeftoverGrace: 50 * time.Millisecond}
	exOpts := executor.Options{Limits: limits, SpillDir: t.TempDir(), Logger: log.Named("executor")}
	var reg *sessions.Registry
	if o.store != nil {
		exOpts.NextTaskID = func(owner string) (int64, error) {
			n, err := o.store.NextTaskIDs(1)
			if err == nil {
				reg.TaskStarted(owner, fmt.Sprintf("bash-%d", n), "")
			}
			return n, err
		}
	}
	ex, err := executor.NewLocal(exOpts)
	if err != nil {
		t.Fatal(err)
	}
	reg = sessions.New(sessions.Options{OnClose: func(id string) { ex.KillOwned(id) }, Store: o.store, GoneNotice: bashtool.GoneNotice, Logger: log.Named("sessions")})
	unsubscribe := ex.Subscribe(func(e executor.TaskEnd) { reg.TaskEnded(e.Owner, e.ID, e.Status.State.String()) })
	t.Cleanup(unsubscribe)
	set, err := bashtool.New(bashtool.Options{Executor: ex, Limits: limits, Notify: reg.Notify, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		set.Close()
		if err := ex.Close(); err != nil {
			t.Errorf("executor close: %v", err)
		}
	})
	tl := o.tools
	if tl == nil {
		tl = set.Tools()
	}
	if o.tap != nil {
		tapped := make([]tools.Tool, len(tl))
		for i, tool := range tl {
			tapped[i] = tappedTool{Tool: tool, tap: o.tap}
		}
		tl = tapped
	}
	var ticker func() (<-chan time.Time, func())
	if o.ticks != nil {
		ticker = func() (<-chan time.Time, func()) { return o.ticks, func() {} }
	}
	if o.mcp.Servers.KillGrace == 0 {
		o.mcp.Servers.KillGrace = 200 * time.Millisecond
	}
	if o.mcp.Servers.SpillDir == "" {
		o.mcp.Servers.SpillDir = t.TempDir()
	}
	if o.mcp.Launcher == nil {
		o.mcp.Launcher = serviceLaunchers(ex)
	}
	turns, err := turn.New(turn.Options{
		Sessions: reg,
		Loop:     &agent.Loop{Provider: o.provider, Tools: tl, Tasks: set, ContextWindow: o.contextWindow, Logger: log.Named("agent")},
		Rules:    o.rules,
		MCP:      o.mcp,
		Model:    cmp.Or(o.model, "test-model"),
		Thinking: o.thinking,
		Logger:   log.Named("turn"),
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := acp.New(acp.Options{
		Sessions:       reg,
		Turns:          turns,
		Name:           "dsh-acp-test",
		Version:        "1.2.3",
		UpdateInterval: 5 * time.Millisecond,
		UpdateTicker:   ticker,
		Models:         o.models,
		Logger:         log.Named("acp"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, reg
}

// serve runs a.Serve over a pipe pair and returns the client's ends. The
// cleanup closes the agent's input (a disconnect) and waits for Serve.
func serve(t *testing.T, a *acp.Agent) (toAgent *io.PipeWriter, fromAgent *io.PipeReader) {
	t.Helper()
	w, r, _ := serveWatched(t, a)
	return w, r
}

// serveWatched is serve that also returns a channel closed when Serve has
// returned.
func serveWatched(t *testing.T, a *acp.Agent) (*io.PipeWriter, *io.PipeReader, <-chan struct{}) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := a.Serve(serveCtx, toAgentR, toClientW); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		toAgentW.Close()
		<-served
		stopServe()
		toClientW.Close()
		toAgentR.Close()
		toClientR.Close()
	})
	return toAgentW, toClientR, served
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	ctx := testutil.Context(t)
	a, reg := newAgent(t, o)
	toAgent, fromAgent, served := serveWatched(t, a)
	cl := newTestClient()
	cl.onPermission = o.onPermission
	conn := acpsdk.NewClientSideConnection(cl, toAgent, fromAgent)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		toAgent.Close()
		fromAgent.Close()
		<-conn.Done()
	})
	h := &harness{t: t, ctx: ctx, agent: a, reg: reg, conn: conn, client: cl, toAgent: toAgent, served: served}
	if !o.noInit {
		req := acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}
		if o.terminal {
			req.ClientCapabilities.Meta = map[string]any{"terminal_output": true}
		}
		var err error
		h.init, err = conn.Initialize(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// newSession opens a session in a fresh temp dir (or dir) with the mode.
func (h *harness) newSession(mode sessions.Mode, dir ...string) (acpsdk.SessionId, string) {
	h.t.Helper()
	cwd := h.t.TempDir()
	if len(dir) > 0 {
		cwd = dir[0]
	}
	resp, err := h.conn.NewSession(h.ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		h.t.Fatal(err)
	}
	// The commands are announced once the reply is out; waiting for them
	// keeps them out of the way of what the test does next.
	h.client.waitUpdate(h.t, h.ctx, resp.SessionId, "available commands", func(u acpsdk.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil })
	if mode != "" && mode != sessions.ModeAsk {
		if _, err := h.conn.SetSessionMode(h.ctx, acpsdk.SetSessionModeRequest{SessionId: resp.SessionId, ModeId: acpsdk.SessionModeId(mode)}); err != nil {
			h.t.Fatal(err)
		}
	}
	return resp.SessionId, cwd
}

func (h *harness) prompt(sid acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	return h.conn.Prompt(h.ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
}

type promptResult struct {
	resp acpsdk.PromptResponse
	err  error
}

// promptAsync starts a prompt; the channel yields its answer.
func (h *harness) promptAsync(sid acpsdk.SessionId, text string) <-chan promptResult {
	ch := make(chan promptResult, 1)
	go func() {
		r, err := h.prompt(sid, text)
		ch <- promptResult{r, err}
	}()
	return ch
}

func (h *harness) await(ch <-chan promptResult, what string) promptResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-h.ctx.Done():
		h.t.Fatalf("timed out waiting for %s", what)
		return promptResult{}
	}
}

func (h *harness) cancel(sid acpsdk.SessionId) {
	h.t.Helper()
	if err := h.conn.Cancel(h.ctx, acpsdk.CancelNotification{SessionId: sid}); err != nil {
		h.t.Fatal(err)
	}
}

// requestError asserts err is a JSON-RPC error with code.
func requestError(t *testing.T, err error, code int) *acpsdk.RequestError {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want a JSON-RPC error %d", err, err, code)
	}
	if re.Code != code {
		t.Fatalf("error code = %d (%v), want %d", re.Code, re, code)
	}
	return re
}

// errorText is the error's message plus its data, as a client would show.
func errorText(re *acpsdk.RequestError) string {
	b, _ := json.Marshal(re.Data)
	return re.Message + " " + string(b)
}

// ---------------------------------------------------------------------------
// Processes and handshakes.

// fifo makes a named pipe in a fresh directory.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// release opens the fifo for writing once its reader (the command) has it
// open, and closes it: the reader sees EOF. Polling with a deadline: an open
// with O_NONBLOCK fails with ENXIO until a reader is there.
func release(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
			return
		}
		if !errors.Is(err, syscall.ENXIO) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for a reader on %s", path)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}

// tappedTool passes every chunk of live output on, then tells tap: the test
// then knows the agent holds what the command printed.
type tappedTool struct {
	tools.Tool
	tap func(tools.Chunk)
}

func (t tappedTool) Prepare(caller tools.Caller, args json.RawMessage) tools.Prepared {
	p := t.Tool.Prepare(caller, args)
	run := p.Run
	p.Run = func(ctx context.Context, live tools.Live) tools.Result {
		if live == nil {
			return run(ctx, nil)
		}
		return run(ctx, func(c tools.Chunk) {
			live(c)
			t.tap(c)
		})
	}
	return p
}

// liveTap records the live output the agent was given, per stream.
type liveTap struct {
	// mu guards the fields below.
	mu      sync.Mutex
	streams map[string]string
	// changed is closed and replaced whenever a chunk arrives.
	changed chan struct{}
}

func newLiveTap() *liveTap {
	return &liveTap{streams: map[string]string{}, changed: make(chan struct{})}
}

func (l *liveTap) tap(c tools.Chunk) {
	l.mu.Lock()
	l.streams[c.Stream] += string(c.Data)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// waitSuffix blocks until the stream's output so far ends with suffix.
func (l *liveTap) waitSuffix(t *testing.T, ctx context.Context, stream, suffix string) {
	t.Helper()
	for {
		l.mu.Lock()
		ok := strings.HasSuffix(l.streams[stream], suffix)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s to end with %q", stream, suffix)
		}
	}
}
