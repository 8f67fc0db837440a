package turn

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// MCPOptions configure the MCP servers the editor passes for each session.
type MCPOptions struct {
	// Servers is the template of every session's mcptool.Options: start
	// and call timeouts, result bound and spill directory. Cwd, Logger,
	// OnNotice, OnToolsChanged and Launcher are set per session. The zero
	// value uses mcptool's defaults.
	Servers mcptool.Options
	// Launcher, when set, gives the launcher of a session's stdio servers
	// (mcptool.Options.Launcher): the agent's starts them as services of
	// that session in the executor, which ends them with it. Nil means
	// Servers' Launcher.
	Launcher func(sessionID string) mcptool.Launcher
	// SpillParent, when set, gives the parent of a session's MCP spill
	// directory, asked on its first spill (mcptool.Options.SpillParent): the
	// agent's is the executor's directory of that session, which its
	// confined commands may read and no other session's can. Nil means
	// Servers' SpillDir or SpillParent.
	SpillParent func(sessionID string) (string, error)
	// AllowReadOnly lets a tool its server annotates read-only run in Ask
	// mode without asking (--allow-mcp-readonly). Deny rules still apply.
	AllowReadOnly bool
}

// StartServers starts a session's MCP servers (a new session; a loaded,
// resumed or forked one too) and returns at once: each server's tools join
// the session's next model request once the server has listed them. A list
// replaces the servers the session had, which are closed. Nothing here
// fails: a server that cannot start is told to the user at the session's
// next turn. The servers' questions go to the user through ask (nil: the
// editor shows none).
func (r *Runner) StartServers(s *sessions.Session, list []mcptool.ServerConfig, ask tools.Elicitor) {
	log := r.log.With(zap.String("session", s.ID))
	if len(list) == 0 {
		if prev, err := s.SetTools(nil); err == nil && prev != nil {
			prev.Close()
		}
		return
	}
	m := &mcpSession{log: log.Named("mcp")}
	opts := r.opts.MCP.Servers
	opts.Cwd = s.Cwd
	opts.Logger = m.log
	opts.OnNotice = m.notice
	opts.OnToolsChanged = func() { m.log.Info("mcp tools listed") }
	if f := r.opts.MCP.SpillParent; f != nil {
		id := s.ID
		opts.SpillParent = func() (string, error) { return f(id) }
	}
	if f := r.opts.MCP.Launcher; f != nil {
		opts.Launcher = f(s.ID)
	}
	opts.Ask = ask
	servers, err := mcptool.Start(list, opts)
	if err != nil {
		// Only a list that cannot run at all (no absolute cwd), which a
		// registered session never has.
		log.Error("mcp servers not started", zap.Error(err))
		return
	}
	m.servers = servers
	log.Info("mcp servers starting", zap.Int("count", len(list)))
	prev, err := s.SetTools(m)
	if err != nil {
		// Closed meanwhile: nobody will use them.
		m.Close()
		return
	}
	if prev != nil {
		prev.Close()
	}
}

// WaitMCP returns when every MCP server of session id has either listed its
// tools or failed, or when ctx ends. An editor's user types after the
// servers start; a headless run prompts at once and waits here instead, so
// the model's first request offers their tools. A session with no servers
// returns at once.
func (r *Runner) WaitMCP(ctx context.Context, id string) error {
	s, err := r.opts.Sessions.Get(id)
	if err != nil {
		return err
	}
	if m := mcpOf(s); m != nil {
		return m.servers.WaitStarted(ctx)
	}
	return nil
}

// MCPGroups are the process groups of session id's stdio MCP servers
// (what a test checks is gone when the session is).
func (r *Runner) MCPGroups(id string) []int {
	s, err := r.opts.Sessions.Get(id)
	if err != nil {
		return nil
	}
	if m := mcpOf(s); m != nil {
		return m.servers.Groups()
	}
	return nil
}

// mcpSession is one session's MCP servers as the agent loop and the
// session see them, plus the notices about them the user has not seen yet.
type mcpSession struct {
	servers *mcptool.Servers
	log     *zap.Logger

	// mu guards notices.
	mu      sync.Mutex
	notices []string
}

var _ sessions.Tools = (*mcpSession)(nil)

func (m *mcpSession) Tools() []tools.Tool {
	list := m.servers.Tools()
	out := make([]tools.Tool, len(list))
	for i, t := range list {
		out[i] = t
	}
	return out
}

func (m *mcpSession) Lookup(name string) (tools.Tool, bool) {
	t, ok := m.servers.Lookup(name)
	if !ok {
		return nil, false
	}
	return t, true
}

// WaitStarted returns when every server has listed its tools or failed
// (each bounded by --mcp-start-timeout), or ctx ends: a turn's first model
// request waits for it (agent.Starting).
func (m *mcpSession) WaitStarted(ctx context.Context) error {
	return m.servers.WaitStarted(ctx)
}

// Close stops the servers: their processes are gone and the spill files
// removed when it returns.
func (m *mcpSession) Close() {
	if err := m.servers.Close(); err != nil {
		m.log.Warn("closing mcp servers", zap.Error(err))
	}
}

// notice queues what the user must be told about a server, once (mcptool
// calls it at most once per server).
func (m *mcpSession) notice(n mcptool.Notice) {
	m.log.Warn("mcp server unavailable", zap.String("mcp_server", n.Server), zap.Error(n.Err))
	m.mu.Lock()
	m.notices = append(m.notices, n.Message())
	m.mu.Unlock()
}

func (m *mcpSession) drain() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.notices
	m.notices = nil
	return n
}

// mcpOf is the session's MCP servers, which StartServers gave it; nil for
// none.
func mcpOf(s *sessions.Session) *mcpSession {
	m, _ := s.Tools().(*mcpSession)
	return m
}

// readOnly reports whether the call is of a tool its server annotates
// read-only, under the very key the approval checks.
func readOnly(s *sessions.Session, call agent.CallInfo) bool {
	m := mcpOf(s)
	if m == nil {
		return false
	}
	t, ok := m.servers.Lookup(call.Name)
	return ok && t.Annotations().ReadOnly && t.ApprovalKey() == call.Call.Subject.Text
}

// mcpNotes delivers a session's MCP notices in its turn, as messages of
// their own: those queued while no turn ran at once (the first thing the
// next prompt shows, before the model's answer — an update sent between
// turns could reach Zed before it knows the session, and an idle thread is
// not where a user looks), and those that arrive during the turn after the
// tool result they follow (a server that died mid-call) and when the turn
// ends. flush runs on the turn's goroutine, before the prompt is answered.
type mcpNotes struct {
	m     *mcpSession // nil: the session has no servers
	show  Show
	first bool
}

func (r *Runner) mcpNotes(s *sessions.Session, show Show) *mcpNotes {
	n := &mcpNotes{m: mcpOf(s), show: show, first: true}
	n.flush()
	return n
}

func (n *mcpNotes) flush() {
	if n.m == nil {
		return
	}
	for _, note := range n.m.drain() {
		text := note + "\n\n"
		if !n.first {
			text = "\n\n" + text
		}
		// A message of its own: a client must not merge it with the
		// model's answer that follows.
		n.show.Say(text)
	}
	n.first = false
}
