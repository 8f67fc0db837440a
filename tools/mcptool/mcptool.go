// Package mcptool connects one session to the MCP servers its editor
// configured and offers their tools to the model beside the bash tools.
//
// A [Servers] belongs to exactly one session: [Start] launches every server
// of the list in parallel and returns at once; a server's tools appear in
// [Servers.Tools] as soon as it has answered its first tools/list, so the
// session's first model request is never delayed by a slow server (a server
// still starting is simply not offered yet, and a call that names one of
// its tools waits for its start). A server that fails to start or
// dies later is reported once through [Options.OnNotice]; the session works
// without it, and a call to one of its tools is an error result naming it.
// [Servers.Close] stops every server of the session. A stdio server is
// started through [Options.Launcher] (the executor, which owns every process
// of the agent): it gets SIGTERM and, after a grace, SIGKILL, with
// everything it started, and ends with its session and with the agent.
//
// Tools are named mcp__<server>__<tool>, every character outside
// [a-zA-Z0-9_-] replaced by '_'; a name longer than the API's 64 bytes, or
// one two tools share, becomes its first 55 bytes, '_' and 8 hex digits of a
// hash of the server and tool names, so the result depends only on the set
// of tools. Each [Tool] carries its server's name, the tool's own name and
// annotations, and implements [tools.Tool].
package mcptool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Transport kinds of a [ServerConfig].
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	// TransportSSE is the deprecated HTTP+SSE transport: it is refused with
	// a per-server error.
	TransportSSE = "sse"
)

// NameValue is one environment variable or HTTP header, in the editor's order.
type NameValue struct {
	Name  string
	Value string
}

// ServerConfig is one MCP server as the editor configured it.
type ServerConfig struct {
	// Name is the server's name in the editor's settings; it appears in
	// tool names, titles and notices. Names must be unique in a list: a
	// repeated name fails to start.
	Name string
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string

	// Command, Args and Env describe a stdio server. Command is a path or a
	// name looked up in the PATH of the server's environment. Env is added
	// to the minimal base environment (see [Options.BaseEnv]) and wins over
	// it; it is passed through untouched, credentials included.
	Command string
	Args    []string
	Env     []NameValue

	// URL and Headers describe an HTTP (streamable) server. Headers are sent
	// with every request.
	URL     string
	Headers []NameValue
}

// Defaults of [Options].
const (
	DefaultStartTimeout   = 30 * time.Second
	DefaultCallTimeout    = 120 * time.Second
	DefaultKillGrace      = 3 * time.Second
	DefaultMaxResultBytes = 32000
)

// Options configure a session's [Servers]. The zero value works (stdio
// servers then need Cwd).
type Options struct {
	// Logger receives diagnostics and every line a stdio server writes to
	// its stderr. Nil means no logging.
	Logger *zap.Logger
	// Cwd is the session's working directory, where stdio servers run. It
	// must be absolute when the list has a stdio server.
	Cwd string
	// StartTimeout bounds, per server, the time from spawn (or first HTTP
	// request) to the answer to its first tools/list. Zero means 30s.
	StartTimeout time.Duration
	// CallTimeout bounds one tools/call. Zero means 120s.
	CallTimeout time.Duration
	// KillGrace bounds how long a stdio server's stderr is still read once
	// its own process is gone (what it started may hold it), and how long
	// a call whose connection broke waits to learn why. The time between
	// SIGTERM and SIGKILL is the Launcher's. Zero means 3s.
	KillGrace time.Duration
	// MaxResultBytes is the most of a result's text the model is given;
	// beyond it the model gets the tail and the full text is spilled to a
	// file. Zero means 32,000.
	MaxResultBytes int
	// SpillDir is the parent of this Servers' private spill directory (mode
	// 0700, created on first need, removed by Close). Empty means
	// os.TempDir().
	SpillDir string
	// SpillParent, when set, is asked on first need for the parent instead
	// of SpillDir, so that the caller can make its directory then (the agent
	// puts a session's MCP spill files in the executor's directory of that
	// session, the one its confined commands may read). Nil means SpillDir.
	SpillParent func() (string, error)
	// BaseEnv is the environment stdio servers' base is taken from; only
	// the names in [BaseEnvNames] are kept. Nil means os.Environ().
	BaseEnv []string
	// HTTPClient sends the requests of HTTP servers; the configured headers
	// are added on top of its transport. Nil means a client of this Servers
	// whose idle connections Close shuts.
	HTTPClient *http.Client

	// OnNotice is told, at most once per server, that it failed to start or
	// died. It is not called for servers stopped by Close. It is called from
	// the server's own goroutine and must return quickly.
	OnNotice func(Notice)
	// OnToolsChanged is called after a server's tool list was (re)read and
	// [Servers.Tools] reflects it. It must return quickly.
	OnToolsChanged func()
	// Launcher starts the stdio servers (see [Launcher]). Nil: a stdio
	// server fails to start.
	Launcher Launcher
	// Ask, when set, passes the servers' elicitation requests to the user
	// (the editor's forms and links); nil means the servers are told the
	// client asks nothing.
	Ask tools.Elicitor

	// protocolVersion, when set, is the MCP version the client asks for
	// (tests run both the stateless and the session protocol).
	protocolVersion string
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.SpillDir == "" {
		o.SpillDir = os.TempDir()
	}
	if o.BaseEnv == nil {
		o.BaseEnv = os.Environ()
	}
	return o
}

// NoticeKind says what happened to a server.
type NoticeKind int

const (
	// FailedToStart: the server never became usable.
	FailedToStart NoticeKind = iota + 1
	// Died: the server was running and stopped on its own.
	Died
)

// Notice is what the user is told about a server, once.
type Notice struct {
	Server string
	Kind   NoticeKind
	Err    error
}

// Message is the sentence for the user: `MCP server "x" failed to start: …`
// or `MCP server "x" died: …`.
func (n Notice) Message() string {
	verb := "failed to start"
	if n.Kind == Died {
		verb = "died"
	}
	return fmt.Sprintf("MCP server %q %s: %v", n.Server, verb, n.Err)
}

// State is where a server is in its life.
type State int

const (
	Starting State = iota
	Ready
	Failed
	Dead
	Closed
)

func (s State) String() string {
	switch s {
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	case Failed:
		return "failed"
	case Dead:
		return "dead"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ServerStatus is a snapshot of one server.
type ServerStatus struct {
	Name  string
	State State
	// Err says why a Failed or Dead server stopped.
	Err error
	// Pgid is a stdio server's process group (0 before spawn or for HTTP).
	Pgid int
	// Tools is how many tools the server offers now.
	Tools int
}

// ErrClosed is returned by calls made after [Servers.Close].
var ErrClosed = errors.New("mcp servers closed")

// Servers is the set of MCP servers of one session.
type Servers struct {
	opts    Options
	servers []*server
	// ctx ends when Close starts: it bounds starts, refreshes and calls.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ownTransport is the HTTP transport Close shuts when HTTPClient was nil.
	ownTransport *http.Transport
	httpClient   *http.Client

	// mu guards the fields below.
	mu       sync.Mutex
	closed   bool
	tools    []*Tool
	byName   map[string]*Tool
	spillDir string
}

// Start launches every server of list in parallel and returns at once; see
// the package comment. It fails only for a list that cannot be run at all
// (a stdio server without an absolute Options.Cwd); a bad server is a
// per-server failure reported through OnNotice.
func Start(list []ServerConfig, opts Options) (*Servers, error) {
	opts = opts.withDefaults()
	for _, c := range list {
		if c.Transport == TransportStdio && !filepath.IsAbs(opts.Cwd) {
			return nil, fmt.Errorf("start mcp servers: stdio server %q needs an absolute working directory, got %q", c.Name, opts.Cwd)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Servers{opts: opts, ctx: ctx, cancel: cancel, byName: map[string]*Tool{}}
	s.httpClient = opts.HTTPClient
	if s.httpClient == nil {
		s.ownTransport = http.DefaultTransport.(*http.Transport).Clone()
		s.httpClient = &http.Client{Transport: s.ownTransport}
	}
	seen := map[string]bool{}
	for i, c := range list {
		srv := newServer(s, i, c)
		s.servers = append(s.servers, srv)
		var dup error
		if seen[c.Name] {
			dup = errors.New("another server of the session has the same name")
		}
		seen[c.Name] = true
		s.wg.Go(func() { srv.run(dup) })
	}
	return s, nil
}

// Tools returns the tools available now, in a stable order: servers in
// configuration order, each server's tools in the order it listed them.
func (s *Servers) Tools() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Lookup finds a tool by its model-facing name. A name that belongs to one
// of this session's servers but is not available now (the server failed,
// died, is still starting, or no longer lists it) yields a Tool whose call
// waits for a server still starting and is then the tool, or an error
// result naming the server; ok is false only for names of no server of
// this session.
func (s *Servers) Lookup(name string) (t *Tool, ok bool) {
	s.mu.Lock()
	t = s.byName[name]
	s.mu.Unlock()
	if t != nil {
		return t, true
	}
	// The longest matching prefix wins, so server "a" cannot claim the
	// tools of server "a__b".
	var best *server
	for _, srv := range s.servers {
		if p := "mcp__" + sanitize(srv.cfg.Name) + "__"; strings.HasPrefix(name, p) {
			if best == nil || len(p) > len("mcp__"+sanitize(best.cfg.Name)+"__") {
				best = srv
			}
		}
	}
	if best == nil {
		return nil, false
	}
	return &Tool{srv: best, name: name, missing: true}, true
}

// WaitStarted returns when every server has either become ready or failed,
// or when ctx ends. It is for callers (and tests) that prefer to wait.
func (s *Servers) WaitStarted(ctx context.Context) error {
	for _, srv := range s.servers {
		select {
		case <-srv.started:
		case <-ctx.Done():
			return fmt.Errorf("wait for mcp servers: %w", context.Cause(ctx))
		}
	}
	return nil
}

// Status returns a snapshot of every server, in configuration order.
func (s *Servers) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(s.servers))
	for _, srv := range s.servers {
		out = append(out, srv.status())
	}
	return out
}

// Groups returns the process groups of the stdio servers running now.
func (s *Servers) Groups() []int {
	var out []int
	for _, srv := range s.servers {
		if st := srv.status(); st.Pgid > 0 && (st.State == Starting || st.State == Ready) {
			out = append(out, st.Pgid)
		}
	}
	return out
}

// Close stops every server and returns when their processes are gone: it
// cancels calls in flight, sends SIGTERM to each stdio server's group and
// SIGKILL after the grace, closes HTTP sessions, and removes the spill
// directory. It is idempotent.
func (s *Servers) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	// Each server's run goroutine sees the cancel and tears its server
	// down; they do so in parallel.
	s.cancel()
	s.wg.Wait()
	if s.ownTransport != nil {
		s.ownTransport.CloseIdleConnections()
	}
	s.mu.Lock()
	s.tools, s.byName = nil, map[string]*Tool{}
	dir := s.spillDir
	s.mu.Unlock()
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove mcp spill dir: %w", err)
		}
	}
	return nil
}

func (s *Servers) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// rebuild recomputes every model-facing name from the servers' current
// lists: a name depends on the whole set (clashes), so one server's change
// can rename another's tool only when they clash.
func (s *Servers) rebuild() {
	type entry struct {
		srv *server
		def toolDef
	}
	var all []entry
	var keys []nameKey
	for _, srv := range s.servers {
		for _, d := range srv.currentDefs() {
			all = append(all, entry{srv, d})
			keys = append(keys, nameKey{Server: srv.cfg.Name, Tool: d.name})
		}
	}
	names := toolNames(keys)
	list := make([]*Tool, len(all))
	byName := make(map[string]*Tool, len(all))
	for i, e := range all {
		t := &Tool{srv: e.srv, name: names[i], def: e.def}
		list[i] = t
		byName[t.name] = t
	}
	s.mu.Lock()
	if !s.closed {
		s.tools, s.byName = list, byName
	}
	s.mu.Unlock()
}

// spillFile creates a 0600 file in the private 0700 spill directory.
func (s *Servers) spillFile(label string) (*os.File, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	dir := s.spillDir
	if dir == "" {
		parent := s.opts.SpillDir
		if s.opts.SpillParent != nil {
			p, err := s.opts.SpillParent()
			if err != nil {
				s.mu.Unlock()
				return nil, fmt.Errorf("spill dir: %w", err)
			}
			parent = p
		}
		d, err := os.MkdirTemp(parent, "dsh-acp-mcp-")
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("spill dir: %w", err)
		}
		s.spillDir, dir = d, d
	}
	s.mu.Unlock()
	f, err := os.CreateTemp(dir, label+"-*.txt")
	if err != nil {
		return nil, fmt.Errorf("spill file: %w", err)
	}
	return f, nil
}
