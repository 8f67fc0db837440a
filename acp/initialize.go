package acp

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// Initialize negotiates the protocol version and advertises only what we
// really do: text prompts with embedded context and images (sent to models
// that read them; no audio), MCP servers over stdio and streamable
// HTTP, session/close and list, and — when sessions are stored —
// session/load, resume and delete.
func (a *Agent) Initialize(_ context.Context, p acpsdk.InitializeRequest) (resp acpsdk.InitializeResponse, err error) {
	defer a.recoverTo("initialize", &err)
	terminal := false
	if v, ok := p.ClientCapabilities.Meta["terminal_output"].(bool); ok {
		terminal = v
	}
	a.mu.Lock()
	a.terminalOutput = terminal
	a.clientReadsFiles = p.ClientCapabilities.Fs.ReadTextFile
	a.mu.Unlock()
	// The model list is fetched once, from now, so the first session/new
	// rarely waits for it (it waits at most modelListTimeout).
	go a.models.get(context.Background())
	a.log.Info("initialize",
		zap.Int("client_protocol_version", int(p.ProtocolVersion)),
		zap.Bool("terminal_output", terminal),
		zap.Bool("fs_read_text_file", p.ClientCapabilities.Fs.ReadTextFile))
	caps := acpsdk.SessionCapabilities{
		Close: &acpsdk.SessionCloseCapabilities{},
		List:  &acpsdk.SessionListCapabilities{},
	}
	stored := a.opts.Sessions.Persistent()
	if stored {
		caps.Resume = &acpsdk.SessionResumeCapabilities{}
		caps.Delete = &acpsdk.SessionDeleteCapabilities{}
	}
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: a.opts.Name, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession:         stored,
			PromptCapabilities:  acpsdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			McpCapabilities:     acpsdk.McpCapabilities{Http: true},
			SessionCapabilities: caps,
		},
		AuthMethods: []acpsdk.AuthMethod{loginMethod()},
	}, nil
}

// LoginMethodID is the terminal sign-in's id in authMethods.
const LoginMethodID = "dsh-acp-login"

// loginMethod is the sign-in an editor offers: it runs this binary with
// "login" in a terminal, which asks for the key, checks it and stores it.
func loginMethod() acpsdk.AuthMethod {
	return acpsdk.AuthMethod{Terminal: &acpsdk.AuthMethodTerminalInline{
		Type: "terminal", Id: LoginMethodID, Name: "Sign in with an API key",
		Description: acpsdk.Ptr("Paste the model endpoint's API key (DeepSeek's by default) in a terminal; it is checked and stored for later runs."),
		Args:        []string{"login"},
	}}
}

// Authenticate runs after the editor's sign-in: the key the terminal
// stored is taken up (Options.Authenticate). Without one the answer is
// auth_required again.
func (a *Agent) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (resp acpsdk.AuthenticateResponse, err error) {
	defer a.recoverTo("authenticate", &err)
	if p.MethodId != LoginMethodID {
		return resp, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown auth method %q: the one method is %q", p.MethodId, LoginMethodID)})
	}
	if a.opts.Authenticate == nil {
		return resp, nil
	}
	if err := a.opts.Authenticate(ctx); err != nil {
		a.log.Info("authenticate: no key yet", zap.Error(err))
		re := acpsdk.NewAuthRequired(map[string]any{"error": err.Error()})
		re.Message = err.Error()
		return resp, re
	}
	a.log.Info("authenticated")
	return resp, nil
}
