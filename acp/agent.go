// Package acp is the Agent Client Protocol surface of dsh-acp. It only
// translates: requests become calls on the session registry and the turn
// runner (package turn, which runs the turn and decides what it does);
// agent events become session/update notifications; the questions the
// turn asks the user become session/request_permission requests.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/wire"
	"github.com/dsh-acp/dsh-acp/internal/logbridge"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/turn"
)

var _ acpsdk.Agent = (*Agent)(nil)

// client is what the agent needs of the connection to the editor.
type client interface {
	SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error
	RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
}

// Options configure an Agent.
type Options struct {
	// Sessions is the registry every session lives in. Required.
	Sessions *sessions.Registry
	// Turns runs the sessions' prompts and owns their MCP servers.
	// Required.
	Turns *turn.Runner
	// Name and Version are advertised in initialize.
	Name    string
	Version string
	// UpdateInterval is the least time between two live-output updates of a
	// running command; zero means 200ms.
	UpdateInterval time.Duration
	// UpdateTicker, if set, replaces the UpdateInterval clock: it is called
	// once per running command, that command's buffered output is sent at
	// each tick, and stop is called when the command ends. Tests drive
	// their own, so output arrives between exactly the updates they ask
	// for.
	UpdateTicker func() (ticks <-chan time.Time, stop func())
	// Models lists the endpoint's other models for the model option, once
	// per process; nil means the configured one only.
	Models ModelLister
	// OnShutdown, if set, is called once as Serve starts to shut down,
	// before it closes the sessions and waits for their turns: the owner
	// of the commands ends them all at once there. It must not block.
	OnShutdown func()
	// SignIn is the sign-in to the model endpoint; nil offers none (a
	// scripted model needs no key) and authenticate always succeeds.
	SignIn *SignIn
	Logger *zap.Logger
}

// Agent implements the SDK's Agent interface.
type Agent struct {
	opts Options
	log  *zap.Logger

	// wire orders the frames read before the handlers see them.
	wire   *wire.Wire
	models *models
	// announce sends a new session's commands after its reply.
	announce announcer

	// mu guards conn, terminalOutput, clientReadsFiles, clientWritesFiles,
	// signInOffered, elicitForm and elicitURL.
	mu   sync.Mutex
	conn client
	// terminalOutput: the client announced Zed's display-only terminal
	// (clientCapabilities._meta.terminal_output).
	terminalOutput bool
	// clientReadsFiles: the client offers fs/read_text_file
	// (clientCapabilities.fs.readTextFile).
	clientReadsFiles bool
	// signInOffered: initialize offered this client a sign-in it can run.
	signInOffered bool
	// clientWritesFiles: the client offers fs/write_text_file.
	clientWritesFiles bool
	// elicitForm, elicitURL: the client shows elicitation/create forms,
	// and links (clientCapabilities.elicitation.form, .url).
	elicitForm, elicitURL bool
}

// New returns an Agent; call Serve to run it over a connection.
func New(opts Options) (*Agent, error) {
	if opts.Sessions == nil || opts.Turns == nil {
		return nil, errors.New("acp: Sessions and Turns are required")
	}
	if opts.UpdateInterval <= 0 {
		opts.UpdateInterval = 200 * time.Millisecond
	}
	if opts.UpdateTicker == nil {
		opts.UpdateTicker = intervalTicker(opts.UpdateInterval)
	}
	if opts.Name == "" {
		opts.Name = "dsh-acp"
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Agent{opts: opts, log: log, wire: wire.New(liveSessions{opts.Sessions}, log),
		models: &models{lister: opts.Models, def: opts.Turns.DefaultModel(), log: log}}, nil
}

// Serve speaks ACP over in/out until the peer closes in or ctx is done, then
// cancels every turn and closes every session. Only protocol frames are
// written to out. Malformed frames are answered with JSON-RPC errors (the
// SDK would drop them silently, or close the connection); see package wire.
// Serve is called once.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	sdkIn, sdkOut, startInput := a.wire.Connect(in, out, a.announce.replied)
	conn := acpsdk.NewAgentSideConnection(a, sdkOut, sdkIn)
	conn.SetLogger(logbridge.New(a.log.Named("sdk")))
	a.mu.Lock()
	a.conn = conn
	a.mu.Unlock()
	startInput()

	select {
	case <-conn.Done():
		a.log.Info("client disconnected")
	case <-ctx.Done():
		a.log.Info("shutting down", zap.Error(context.Cause(ctx)))
	}
	if a.opts.OnShutdown != nil {
		a.opts.OnShutdown()
	}
	// Cancel every turn and wait for them, then for the replies to every
	// request already read: a client that writes a request and closes its
	// end at once still gets its answer.
	a.opts.Sessions.CloseAll()
	if !a.wire.WaitReplies() {
		a.log.Warn("shutting down with replies still unwritten")
	}
	// Unblock the filter and end the SDK's reader, if still running.
	a.wire.Close()
	return nil
}

// liveSessions is what the wire asks of the registry.
type liveSessions struct{ r *sessions.Registry }

func (l liveSessions) Known(sid string) bool {
	_, err := l.r.Get(sid)
	return err == nil
}

func (l liveSessions) CancelThrough(sid string, n uint64) {
	if s, err := l.r.Get(sid); err == nil {
		s.CancelThrough(sessions.Ticket(n))
	}
}

func (a *Agent) client() client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

func (a *Agent) sessionLogger(id string) *zap.Logger {
	return a.log.With(zap.String("session", id))
}

// recoverTo turns a panic in a handler into an internal error, so one bad
// request cannot take the process (and every other session) down.
func (a *Agent) recoverTo(method string, err *error) {
	if r := recover(); r != nil {
		a.log.Error("handler panicked", zap.String("method", method), zap.Any("panic", r), zap.Stack("stack"))
		*err = acpsdk.NewInternalError(map[string]any{"error": fmt.Sprintf("internal error in %s", method)})
	}
}
