package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"iter"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

var _ acpsdk.AgentLoader = (*Agent)(nil)

// LoadSession makes a stored session live with the cwd given and replays
// its conversation as session/update notifications before it answers. A
// session already live here keeps its state and is replayed too: the
// protocol says load replays, and a client reopening a thread it never
// closed would otherwise show it empty.
func (a *Agent) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (resp acpsdk.LoadSessionResponse, err error) {
	defer a.recoverTo("session/load", &err)
	l, err := a.open(string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers)
	if err != nil {
		return resp, toRequestError(err)
	}
	a.replay(ctx, l.Session, l.Replay)
	a.announceCommands(l.Session.ID)
	a.announce.madeLive(l.Session.ID)
	return acpsdk.LoadSessionResponse{Modes: a.modeState(l.Session), ConfigOptions: a.configOptions(ctx, l.Session)}, nil
}

// ResumeSession is LoadSession without the replay.
func (a *Agent) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (resp acpsdk.ResumeSessionResponse, err error) {
	defer a.recoverTo("session/resume", &err)
	l, err := a.open(string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers)
	if err != nil {
		return resp, toRequestError(err)
	}
	a.announceCommands(l.Session.ID)
	a.announce.madeLive(l.Session.ID)
	return acpsdk.ResumeSessionResponse{Modes: a.modeState(l.Session), ConfigOptions: a.configOptions(ctx, l.Session)}, nil
}

// UnstableDeleteSession removes a session from the store, closing it first
// if it is live.
func (a *Agent) UnstableDeleteSession(_ context.Context, p acpsdk.UnstableDeleteSessionRequest) (resp acpsdk.UnstableDeleteSessionResponse, err error) {
	defer a.recoverTo("session/delete", &err)
	if err := a.opts.Sessions.Delete(string(p.SessionId)); err != nil {
		return resp, toRequestError(err)
	}
	a.sessionLogger(string(p.SessionId)).Info("session deleted")
	return resp, nil
}

// open makes the session live and starts its MCP servers; a session
// already live keeps the servers it has.
func (a *Agent) open(id, cwd string, roots []string, mcpServers []acpsdk.McpServer) (sessions.Loaded, error) {
	l, err := a.opts.Sessions.Open(id, cwd, roots)
	if err != nil {
		return l, err
	}
	log := a.sessionLogger(id)
	if l.WasLive {
		log.Info("session already live", zap.String("cwd", l.Session.Cwd), zap.Strings("roots", l.Session.Roots()))
		return l, nil
	}
	log.Info("session loaded", zap.String("cwd", l.Session.Cwd), zap.Strings("roots", l.Session.Roots()))
	a.startServers(l.Session, mcpServers)
	return l, nil
}

// replay sends the stored conversation as the editor saw it: each prompt,
// the model's reasoning and text, and each tool call with its title, kind,
// rawInput, final status and content (not its live output).
func (a *Agent) replay(ctx context.Context, s *sessions.Session, steps iter.Seq[sessions.Replayed]) {
	for r := range steps {
		for _, up := range replayed(s, r) {
			a.sendUpdate(ctx, s.ID, up)
		}
	}
}

// replayed is the updates that show one step of a conversation again.
func replayed(s *sessions.Session, r sessions.Replayed) []acpsdk.SessionUpdate {
	switch {
	case r.Prompt != nil:
		return replayedPrompt(s, r.Prompt)
	case r.Message != nil:
		return replayedMessage(r.Message)
	case r.Call != nil:
		return []acpsdk.SessionUpdate{replayedCall(r.Call)}
	case r.Plan != nil:
		return []acpsdk.SessionUpdate{planUpdate(r.Plan)}
	case r.Compaction != nil:
		start := compactionStart(*r.Compaction)
		start.ToolCall.Status = acpsdk.ToolCallStatusCompleted
		return []acpsdk.SessionUpdate{start, compactionEnd(*r.Compaction, nil)}
	case r.Noticed != nil:
		return []acpsdk.SessionUpdate{replayedNoticed(r.Noticed)}
	}
	return nil
}

// replayedPrompt is the prompt's blocks as the editor sent them, their
// images' data read back; its text alone when they were not kept.
func replayedPrompt(s *sessions.Session, p *sessions.ReplayedPrompt) []acpsdk.SessionUpdate {
	var blocks []acpsdk.ContentBlock
	if len(p.Blocks) == 0 || json.Unmarshal(p.Blocks, &blocks) != nil || len(blocks) == 0 {
		blocks = []acpsdk.ContentBlock{acpsdk.TextBlock(p.Text)}
	}
	restoreImages(s, blocks, p.Images)
	out := make([]acpsdk.SessionUpdate, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, acpsdk.UpdateUserMessage(b))
	}
	return out
}

// replayedMessage carries ids as live messages do: one for the reasoning,
// one for the text.
func replayedMessage(m *sessions.ReplayedMessage) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	if m.Reasoning != "" {
		out = append(out, thoughtChunk(agent.Event{Text: m.Reasoning, MessageID: uuid.NewString()}))
	}
	if m.Text != "" {
		id := m.ID
		if id == "" {
			id = uuid.NewString()
		}
		out = append(out, messageChunk(agent.Event{Text: m.Text, MessageID: id}))
	}
	return out
}

func replayedCall(c *sessions.ReplayedCall) acpsdk.SessionUpdate {
	v := c.View
	title := v.Title
	if title == "" {
		title = c.Name
	}
	kind := acpsdk.ToolKind(v.Kind)
	if kind == "" {
		kind = acpsdk.ToolKindOther
	}
	status := acpsdk.ToolCallStatus(v.Status)
	if status == "" {
		status = acpsdk.ToolCallStatusCompleted
		if c.IsError {
			status = acpsdk.ToolCallStatusFailed
		}
	}
	opts := []acpsdk.ToolCallStartOpt{acpsdk.WithStartKind(kind), acpsdk.WithStartStatus(status)}
	if len(v.RawInput) > 0 {
		opts = append(opts, acpsdk.WithStartRawInput(v.RawInput))
	}
	var content []acpsdk.ToolCallContent
	if len(v.Content) == 0 || json.Unmarshal(v.Content, &content) != nil {
		content = []acpsdk.ToolCallContent{fenced(c.Text)}
	}
	opts = append(opts, acpsdk.WithStartContent(content))
	up := acpsdk.StartToolCall(acpsdk.ToolCallId(c.ID), title, opts...)
	var locs []acpsdk.ToolCallLocation
	if len(v.Locations) > 0 && json.Unmarshal(v.Locations, &locs) == nil {
		// Set as is: WithStartLocations would add a path to rawInput.
		up.ToolCall.Locations = locs
	}
	return up
}

// restoreImages puts the stored images (refs, in order) back into a
// prompt's image blocks, which were stored without their data
// (storedBlocks).
func restoreImages(s *sessions.Session, blocks []acpsdk.ContentBlock, refs []string) {
	i := 0
	for _, b := range blocks {
		if b.Image == nil || b.Image.Data != "" || i >= len(refs) {
			continue
		}
		if data, err := s.Image(refs[i]); err == nil {
			b.Image.Data = base64.StdEncoding.EncodeToString(data)
		}
		i++
	}
}
