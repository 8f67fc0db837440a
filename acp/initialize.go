package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// Initialize negotiates the protocol version and advertises only what we
// really do: text prompts with embedded context (no images or audio, which
// the model path does not carry), MCP servers over stdio and streamable
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
			PromptCapabilities:  acpsdk.PromptCapabilities{EmbeddedContext: true},
			McpCapabilities:     acpsdk.McpCapabilities{Http: true},
			SessionCapabilities: caps,
		},
		AuthMethods: []acpsdk.AuthMethod{},
	}, nil
}

// Authenticate accepts: no auth methods are advertised; the model key comes
// from the environment.
func (a *Agent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}
