package acp

import (
	"context"
	"encoding/json"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
)

// availableCommands is the agent's slash commands as ACP lists them.
func availableCommands() []acpsdk.AvailableCommand {
	cmds := agent.Commands()
	out := make([]acpsdk.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acpsdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: c.Hint}}
		}
		out = append(out, ac)
	}
	return out
}

// announceCommands sends the session's slash commands and, when the session
// has measured one, its context usage (a loaded session shows its ring at
// once). session/load and session/resume call it before they reply: the
// client knows the session then. session/new cannot (the client learns the
// id from the reply) and uses announceAfterReply.
func (a *Agent) announceCommands(sid string) {
	conn := a.client()
	if conn == nil {
		return
	}
	log := a.sessionLogger(sid)
	send := func(up acpsdk.SessionUpdate) {
		if err := conn.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: acpsdk.SessionId(sid), Update: up}); err != nil {
			log.Debug("session update not delivered", zap.Error(err))
		}
	}
	send(acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{AvailableCommands: availableCommands()}})
	if s, err := a.opts.Sessions.Get(sid); err == nil {
		if u := s.Usage(); u.Size > 0 {
			send(usageUpdate(u))
		}
	}
}

// announceAfterReply announces the session's commands once the reply that
// carries its id (session/new's) has been written.
func (a *Agent) announceAfterReply(sid string) {
	a.announce.madeLive(sid)
	a.announce.add(sid, func() { a.announceCommands(sid) })
}

// announcer holds what is to be sent after the reply naming a session,
// and which sessions are to hear their commands again at their next prompt.
type announcer struct {
	// mu guards pending and atPrompt.
	mu      sync.Mutex
	pending map[string]func()
	// atPrompt holds the sessions made live (new, load, resume) that have
	// had no prompt since: clients that register a session only once they
	// read the reply naming it (the Go SDK's, acp.el) drop what came before
	// as "unknown session", so the first prompt announces the commands
	// again.
	atPrompt map[string]bool
}

// madeLive marks sid to announce its commands at its next prompt.
func (an *announcer) madeLive(sid string) {
	an.mu.Lock()
	defer an.mu.Unlock()
	if an.atPrompt == nil {
		an.atPrompt = map[string]bool{}
	}
	an.atPrompt[sid] = true
}

// takePrompt reports whether sid's prompt is to announce its commands, and
// clears the mark.
func (an *announcer) takePrompt(sid string) bool {
	an.mu.Lock()
	defer an.mu.Unlock()
	ok := an.atPrompt[sid]
	delete(an.atPrompt, sid)
	return ok
}

func (an *announcer) add(sid string, f func()) {
	an.mu.Lock()
	defer an.mu.Unlock()
	if an.pending == nil {
		an.pending = map[string]func(){}
	}
	an.pending[sid] = f
}

// replied looks at the result of a reply the agent wrote: one that names
// a pending session starts its announcement (on its own goroutine: this
// runs inside the connection's write).
func (an *announcer) replied(result json.RawMessage) {
	an.mu.Lock()
	idle := len(an.pending) == 0
	an.mu.Unlock()
	if idle {
		return
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(result, &r) != nil || r.SessionID == "" {
		return
	}
	an.mu.Lock()
	f := an.pending[r.SessionID]
	delete(an.pending, r.SessionID)
	an.mu.Unlock()
	if f != nil {
		go f()
	}
}
