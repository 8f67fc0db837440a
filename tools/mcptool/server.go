package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/logbridge"
)

// clientVersion is what dsh-acp tells servers it is.
const clientVersion = "0.1.0"

// toolDef is a tool as its server listed it, converted once.
type toolDef struct {
	name        string
	title       string
	description string
	schema      json.RawMessage
	ann         Annotations
}

// server is one configured server. Its run goroutine owns the connection
// and the process: it starts them, serves refreshes, notices the end, and
// tears everything down when the Servers closes.
type server struct {
	s   *Servers
	cfg ServerConfig
	log *zap.Logger
	// started is closed when the start settled (ready or failed).
	started chan struct{}
	// refresh asks run to list the tools again (capacity 1: requests
	// coalesce).
	refresh chan struct{}

	// mu guards the fields below.
	mu    sync.Mutex
	state State
	err   error
	cs    *mcp.ClientSession
	defs  []toolDef
	proc  *stdioProc
	// gone is closed when state leaves Ready or Starting for good.
	gone chan struct{}
	// calls counts the calls in flight by tool call id: an elicitation the
	// server sends while exactly one runs belongs to that call.
	calls map[string]int
}

func newServer(s *Servers, idx int, cfg ServerConfig) *server {
	return &server{
		s:       s,
		cfg:     cfg,
		log:     s.opts.Logger.With(zap.String("mcp_server", cfg.Name), zap.Int("mcp_index", idx)),
		started: make(chan struct{}),
		refresh: make(chan struct{}, 1),
		gone:    make(chan struct{}),
	}
}

func (v *server) status() ServerStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := ServerStatus{Name: v.cfg.Name, State: v.state, Err: v.err, Tools: len(v.defs)}
	if v.proc != nil {
		st.Pgid = v.proc.group()
	}
	return st
}

func (v *server) currentDefs() []toolDef {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.state != Ready {
		return nil
	}
	return v.defs
}

// session returns the live client session, or the error a call gets.
func (v *server) session() (*mcp.ClientSession, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch v.state {
	case Ready:
		return v.cs, nil
	case Starting:
		return nil, fmt.Errorf("MCP server %q is still starting", v.cfg.Name)
	case Closed:
		return nil, fmt.Errorf("MCP server %q: %w", v.cfg.Name, ErrClosed)
	}
	kind := FailedToStart
	if v.state == Dead {
		kind = Died
	}
	return nil, errors.New(Notice{Server: v.cfg.Name, Kind: kind, Err: v.err}.Message())
}

// run is the server's life; see server.
func (v *server) run(dup error) {
	if dup != nil {
		v.settle(FailedToStart, dup)
		return
	}
	startCtx, cancel := context.WithTimeout(v.s.ctx, v.s.opts.StartTimeout)
	cs, defs, err := v.start(startCtx)
	timedOut := errors.Is(startCtx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		v.teardown(cs)
		if timedOut {
			// Its exit status is our SIGTERM: only its stderr can help.
			err = v.withExit(fmt.Errorf("no answer within %s", v.s.opts.StartTimeout), false)
		} else {
			err = v.withExit(err, true)
		}
		v.settle(FailedToStart, err)
		return
	}
	v.mu.Lock()
	v.state, v.cs, v.defs = Ready, cs, defs
	v.mu.Unlock()
	v.log.Info("mcp server ready", zap.Int("tools", len(defs)))
	v.s.rebuild()
	close(v.started)
	v.changed()

	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-v.refresh:
			v.relist(cs)
		case err := <-ended:
			if v.s.ctx.Err() != nil {
				v.teardown(cs)
				v.settle(0, nil)
				return
			}
			if err == nil {
				err = errors.New("connection closed")
			}
			// Told as soon as the server's own process is over: a call
			// that saw the connection break waits for the cause, not for
			// the end of everything the server started.
			v.stopped(cs)
			v.settle(Died, v.withExit(err, true))
			v.teardown(cs)
			return
		case <-v.s.ctx.Done():
			v.teardown(cs)
			<-ended
			v.settle(0, nil)
			return
		}
	}
}

// start connects and reads the first tool list. On failure cs may be
// non-nil (connected, listing failed) for teardown.
func (v *server) start(ctx context.Context) (*mcp.ClientSession, []toolDef, error) {
	var transport mcp.Transport
	switch v.cfg.Transport {
	case TransportStdio:
		p, t, err := newStdioProc(v.cfg, v.s.opts, v.log)
		if err != nil {
			return nil, nil, err
		}
		v.mu.Lock()
		v.proc = p
		v.mu.Unlock()
		// A start that times out (or a Close) must not wait for the SDK's
		// polite shutdown of a server that never answered.
		stop := context.AfterFunc(ctx, p.terminate)
		defer stop()
		transport = t
		defer func() {
			// Client.Connect does not close every connection it gives up
			// on; closing twice is harmless.
			if t.conn != nil && ctx.Err() != nil {
				_ = t.conn.Close()
			}
		}()
	case TransportHTTP:
		if v.cfg.URL == "" {
			return nil, nil, errors.New("no URL configured")
		}
		client := v.s.httpClient
		if len(v.cfg.Headers) > 0 {
			base := client.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			c := *client
			c.Transport = &headerTransport{base: base, headers: v.cfg.Headers}
			client = &c
		}
		transport = &mcp.StreamableClientTransport{Endpoint: v.cfg.URL, HTTPClient: client}
	case TransportSSE:
		return nil, nil, errors.New("the SSE transport is deprecated and not supported; configure the server's streamable HTTP endpoint")
	default:
		return nil, nil, fmt.Errorf("unknown transport %q", v.cfg.Transport)
	}

	copts := &mcp.ClientOptions{
		Logger: logbridge.New(v.log),
		// No roots or sampling: the client offers tool calls, and
		// elicitation when the editor asks the user.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case v.refresh <- struct{}{}:
			default:
			}
		},
	}
	v.offerElicitation(copts)
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-acp", Version: clientVersion}, copts)
	var sopts *mcp.ClientSessionOptions
	if v.s.opts.protocolVersion != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: v.s.opts.protocolVersion}
	}
	cs, err := client.Connect(ctx, transport, sopts)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	defs, err := listTools(ctx, cs)
	if err != nil {
		return cs, nil, err
	}
	return cs, defs, nil
}

// relist reads the tool list again after a list_changed notification.
// A failure keeps the old list: the server may still answer calls.
func (v *server) relist(cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(v.s.ctx, v.s.opts.StartTimeout)
	defer cancel()
	defs, err := listTools(ctx, cs)
	if err != nil {
		v.log.Warn("mcp relist tools", zap.Error(err))
		return
	}
	v.mu.Lock()
	v.defs = defs
	v.mu.Unlock()
	v.log.Info("mcp tools changed", zap.Int("tools", len(defs)))
	v.s.rebuild()
	v.changed()
}

func (v *server) changed() {
	if f := v.s.opts.OnToolsChanged; f != nil {
		f()
	}
}

// stopped closes the connection of a server that ended it and, for a
// stdio server, returns once its own process has ended and its stderr was
// read: its exit status and last words are known. It is not stopped first:
// ending what it started walks the process table, which the launcher does
// on its own once the server has exited, and teardown waits for.
func (v *server) stopped(cs *mcp.ClientSession) {
	v.mu.Lock()
	p := v.proc
	v.mu.Unlock()
	if err := cs.Close(); err != nil {
		v.log.Debug("mcp session close", zap.Error(err))
	}
	if p != nil {
		p.awaitExit()
	}
}

// teardown closes the connection and, for a stdio server, makes sure its
// whole group is gone.
func (v *server) teardown(cs *mcp.ClientSession) {
	v.mu.Lock()
	p := v.proc
	v.mu.Unlock()
	if p != nil {
		p.terminate()
	}
	if cs != nil {
		if err := cs.Close(); err != nil {
			v.log.Debug("mcp session close", zap.Error(err))
		}
	}
	if p != nil {
		p.finish()
		if pgid := p.group(); pgid > 0 {
			v.log.Info("mcp server group gone", zap.Int("pgid", pgid))
		}
	}
}

// withExit adds to err what the process said when it ended: its exit
// status (when status is set) and the last lines of its stderr.
func (v *server) withExit(err error, status bool) error {
	v.mu.Lock()
	p := v.proc
	v.mu.Unlock()
	if p == nil {
		return err
	}
	var parts []string
	if werr := p.exitErr(); werr != nil && status && !strings.Contains(err.Error(), werr.Error()) {
		parts = append(parts, werr.Error())
	}
	if tail := p.stderrTail(); tail != "" {
		parts = append(parts, "stderr: "+tail)
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(parts, "; "))
}

// settle records the end of the server. kind 0 means stopped by Close: no
// notice.
func (v *server) settle(kind NoticeKind, err error) {
	closing := v.s.isClosed() || v.s.ctx.Err() != nil
	v.mu.Lock()
	wasReady := v.state == Ready
	switch {
	case closing || kind == 0:
		v.state = Closed
	case kind == Died:
		v.state, v.err = Dead, err
	default:
		v.state, v.err = Failed, err
	}
	v.defs = nil
	v.mu.Unlock()
	close(v.gone)
	if closing || kind == 0 {
		if !wasReady {
			close(v.started)
		} else {
			v.s.rebuild()
		}
		return
	}
	n := Notice{Server: v.cfg.Name, Kind: kind, Err: err}
	v.log.Warn("mcp server unavailable", zap.String("notice", n.Message()))
	if !wasReady {
		// Told before started closes: whoever waited for the start (a
		// turn) finds the notice already queued, not in the middle of
		// its answer.
		v.notify(n)
		close(v.started)
		return
	}
	v.s.rebuild()
	v.changed()
	v.notify(n)
}

func (v *server) notify(n Notice) {
	if f := v.s.opts.OnNotice; f != nil {
		f(n)
	}
}

// listTools reads every page of the server's tool list.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]toolDef, error) {
	var defs []toolDef
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		d, err := convertTool(t)
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return defs, nil
}

func convertTool(t *mcp.Tool) (toolDef, error) {
	d := toolDef{name: t.Name, title: t.Title, description: t.Description}
	if d.title == "" && t.Annotations != nil {
		d.title = t.Annotations.Title
	}
	if d.description == "" {
		d.description = d.title
	}
	schema, err := normalizeSchema(t.InputSchema)
	if err != nil {
		return toolDef{}, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
	}
	d.schema = schema
	if a := t.Annotations; a != nil {
		d.ann.ReadOnly = a.ReadOnlyHint
		d.ann.Destructive = a.DestructiveHint != nil && *a.DestructiveHint
		d.ann.OpenWorld = a.OpenWorldHint != nil && *a.OpenWorldHint
		d.ann.Idempotent = a.IdempotentHint
	}
	return d, nil
}

// normalizeSchema marshals the server's input schema and gives an object
// schema without properties an empty "properties": OpenAI's API rejects an
// object schema that lacks it.
func normalizeSchema(s any) (json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if _, ok := m["properties"]; !ok && m["type"] == "object" {
		m["properties"] = map[string]any{}
		if b, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// headerTransport adds an HTTP server's configured headers to each request.
type headerTransport struct {
	base    http.RoundTripper
	headers []NameValue
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, h := range t.headers {
		r.Header.Set(h.Name, h.Value)
	}
	return t.base.RoundTrip(r)
}

// waitGone waits up to d for the server to leave Ready (a call that saw the
// connection break waits for run to record why).
func (v *server) waitGone(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-v.gone:
	case <-t.C:
	case <-ctx.Done():
	}
}
