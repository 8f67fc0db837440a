package acp

import (
	"context"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
)

// Initialize negotiates the protocol version and advertises only what we
// really do: text prompts with embedded context and images (sent to models
// that read them; no audio), MCP servers over stdio and streamable
// HTTP, session/close, list and fork, and — when sessions are stored —
// session/load, resume and delete.
func (a *Agent) Initialize(_ context.Context, p acpsdk.InitializeRequest) (resp acpsdk.InitializeResponse, err error) {
	defer a.recoverTo("initialize", &err)
	terminal := false
	if v, ok := p.ClientCapabilities.Meta["terminal_output"].(bool); ok {
		terminal = v
	}
	// The sign-in is offered in the forms this client runs: the spec's
	// terminal method only to a client that declares auth.terminal, Zed's
	// older _meta["terminal-auth"] form to one that asks for it.
	metaAuth, _ := p.ClientCapabilities.Meta["terminal-auth"].(bool)
	methods := a.authMethods(p.ClientCapabilities.Auth.Terminal, metaAuth)
	a.mu.Lock()
	a.terminalOutput = terminal
	a.clientReadsFiles = p.ClientCapabilities.Fs.ReadTextFile
	a.signInOffered = len(methods) > 0
	a.clientWritesFiles = p.ClientCapabilities.Fs.WriteTextFile
	// A mode is supported only when its object is present (ACP: {} and
	// {"form":null} advertise none).
	if e := p.ClientCapabilities.Elicitation; e != nil {
		a.elicitForm, a.elicitURL = e.Form != nil, e.Url != nil
	}
	a.mu.Unlock()
	// The model list is fetched once, from now, so the first session/new
	// rarely waits for it (it waits at most modelListTimeout).
	go a.models.get(context.Background())
	a.log.Info("initialize",
		zap.Int("client_protocol_version", int(p.ProtocolVersion)),
		zap.Bool("terminal_output", terminal),
		zap.Bool("auth_terminal", p.ClientCapabilities.Auth.Terminal),
		zap.Bool("terminal_auth_meta", metaAuth),
		zap.Bool("fs_read_text_file", p.ClientCapabilities.Fs.ReadTextFile),
		zap.Bool("fs_write_text_file", p.ClientCapabilities.Fs.WriteTextFile),
		zap.Bool("elicitation_form", a.elicitForm), zap.Bool("elicitation_url", a.elicitURL))
	caps := acpsdk.SessionCapabilities{
		Close: &acpsdk.SessionCloseCapabilities{},
		List:  &acpsdk.SessionListCapabilities{},
		Fork:  &acpsdk.SessionForkCapabilities{},
		// Zed sends a multi-root project's other folders only to an
		// agent that says it takes them.
		AdditionalDirectories: &acpsdk.SessionAdditionalDirectoriesCapabilities{},
	}
	stored := a.opts.Sessions.Persistent()
	if stored {
		caps.Resume = &acpsdk.SessionResumeCapabilities{}
		caps.Delete = &acpsdk.SessionDeleteCapabilities{}
	}
	var auth acpsdk.AgentAuthCapabilities
	if a.opts.SignIn != nil && a.opts.SignIn.Logout != nil {
		auth.Logout = &acpsdk.LogoutCapabilities{}
	}
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: a.opts.Name, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession:         stored,
			PromptCapabilities:  acpsdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			McpCapabilities:     acpsdk.McpCapabilities{Http: true},
			SessionCapabilities: caps,
			Auth:                auth,
		},
		AuthMethods: methods,
	}, nil
}

// LoginMethodID is the terminal sign-in's id in authMethods.
const LoginMethodID = "dsh-acp-login"

// SignIn is how a user signs in to the model endpoint from the editor.
type SignIn struct {
	// Ready reports whether the model can be asked now; an error wrapping
	// agent.ErrAuthRequired says a sign-in is needed, and how. It is asked
	// at authenticate and at session/new, so it must be cheap (no request).
	Ready func(ctx context.Context) error
	// Logout removes the key stored for the endpoint (ACP's logout); msg
	// says what it did. Nil: logout is not offered.
	Logout func(ctx context.Context) (msg string, err error)
	// Command is the absolute path of the running binary, and Args the
	// serve flags it was started with: the _meta["terminal-auth"] form
	// runs Command Args... login, so the sign-in is for the endpoint this
	// process uses. The spec's terminal form runs the editor's own command
	// for the agent with "login" added.
	Command string
	Args    []string
	// Env are variables the sign-in must see as this process does (where
	// keys are kept, which endpoint); never a key.
	Env map[string]string
}

const (
	loginName        = "Sign in with an API key"
	loginDescription = "Paste the model endpoint's API key (DeepSeek's by default) in a terminal; it is checked, stored for that endpoint and used at once."
)

// authMethods is the sign-in offered to a client: for one that declares
// auth.terminal, the spec's terminal method (the editor runs its command
// for the agent with "login" added); for one that sends
// _meta["terminal-auth"]: true (stock Zed), the same method carries that
// form's {label, command, args, env}, and is an agent-type method unless
// the client also declared auth.terminal. A client that declares neither
// is offered nothing it could not run: an empty list (a prompt then says
// how to sign in from a terminal).
func (a *Agent) authMethods(terminal, metaAuth bool) []acpsdk.AuthMethod {
	si := a.opts.SignIn
	if si == nil || !terminal && !metaAuth {
		return []acpsdk.AuthMethod{}
	}
	var meta map[string]any
	if metaAuth {
		env := map[string]any{}
		for k, v := range si.Env {
			env[k] = v
		}
		meta = map[string]any{"terminal-auth": map[string]any{
			"label":   "dsh-acp login",
			"command": si.Command,
			"args":    append(append([]string{}, si.Args...), "login"),
			"env":     env,
		}}
	}
	if terminal {
		return []acpsdk.AuthMethod{{Terminal: &acpsdk.AuthMethodTerminalInline{
			Type: "terminal", Id: LoginMethodID, Name: loginName,
			Description: acpsdk.Ptr(loginDescription),
			Args:        []string{"login"},
			Meta:        meta,
		}}}
	}
	return []acpsdk.AuthMethod{{Agent: &acpsdk.AuthMethodAgent{
		Id: LoginMethodID, Name: loginName,
		Description: acpsdk.Ptr(loginDescription),
		Meta:        meta,
	}}}
}

// Authenticate runs after the editor's sign-in (stock Zed calls it once
// its terminal closes): the key is looked up when a request needs it, so
// this only says whether one is there now. Without one the answer is
// auth_required again.
func (a *Agent) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (resp acpsdk.AuthenticateResponse, err error) {
	defer a.recoverTo("authenticate", &err)
	if p.MethodId != LoginMethodID {
		return resp, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown auth method %q: the one method is %q", p.MethodId, LoginMethodID)})
	}
	if a.opts.SignIn == nil {
		return resp, nil
	}
	if err := a.opts.SignIn.Ready(ctx); err != nil {
		a.log.Info("authenticate: no key yet", zap.Error(err))
		return resp, authRequired(err)
	}
	a.log.Info("authenticated")
	// The model list may have failed for want of the key.
	a.modelsMaybeChanged(ctx)
	return resp, nil
}

// Logout removes the stored key of the endpoint, as dsh-acp logout does.
// A key in the environment stays, and stays in use.
func (a *Agent) Logout(ctx context.Context, _ acpsdk.LogoutRequest) (resp acpsdk.LogoutResponse, err error) {
	defer a.recoverTo("logout", &err)
	if a.opts.SignIn == nil || a.opts.SignIn.Logout == nil {
		return resp, acpsdk.NewMethodNotFound(acpsdk.AgentMethodLogout)
	}
	msg, err := a.opts.SignIn.Logout(ctx)
	if err != nil {
		a.log.Warn("logout failed", zap.Error(err))
		return resp, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	a.log.Info("logout", zap.String("result", msg))
	a.modelsMaybeChanged(ctx)
	return resp, nil
}

// signInNeeded is auth_required when this client was offered a sign-in and
// the model cannot be asked without one: session/new answers it, so the
// editor shows its sign-in before the user types. A client offered none
// gets its session; its prompt then says how to sign in.
func (a *Agent) signInNeeded(ctx context.Context) error {
	a.mu.Lock()
	offered := a.signInOffered
	a.mu.Unlock()
	if !offered || a.opts.SignIn == nil {
		return nil
	}
	if err := a.opts.SignIn.Ready(ctx); errors.Is(err, agent.ErrAuthRequired) {
		return authRequired(err)
	}
	return nil
}

// authRequired is ACP's auth_required (-32000) saying err.
func authRequired(err error) *acpsdk.RequestError {
	re := acpsdk.NewAuthRequired(map[string]any{"error": err.Error()})
	re.Message = err.Error()
	return re
}
