package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

var _ acpsdk.AgentLoader = (*Agent)(nil)

// LoadSession makes a stored session live with the cwd given and replays
// its conversation as session/update notifications before it answers. A
// session already live here keeps its state and is replayed too: the
// protocol says load replays, and a client reopening a thread it never
// closed would otherwise show it empty.
func (a *Agent) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (resp acpsdk.LoadSessionResponse, err error) {
	defer a.recoverTo("session/load", &err)
	l, err := a.open(string(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return resp, toRequestError(err)
	}
	a.replay(ctx, l.Session, l.Entries)
	a.announceCommands(l.Session.ID)
	a.announce.madeLive(l.Session.ID)
	return acpsdk.LoadSessionResponse{Modes: a.modeState(l.Session), ConfigOptions: a.configOptions(ctx, l.Session)}, nil
}

// ResumeSession is LoadSession without the replay.
func (a *Agent) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (resp acpsdk.ResumeSessionResponse, err error) {
	defer a.recoverTo("session/resume", &err)
	l, err := a.open(string(p.SessionId), p.Cwd, p.McpServers)
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
func (a *Agent) open(id, cwd string, mcpServers []acpsdk.McpServer) (sessions.Loaded, error) {
	l, err := a.opts.Sessions.Open(id, cwd)
	if err != nil {
		return l, err
	}
	log := a.sessionLogger(id)
	if l.WasLive {
		log.Info("session already live", zap.String("cwd", l.Session.Cwd))
		return l, nil
	}
	log.Info("session loaded", zap.String("cwd", l.Session.Cwd))
	a.startServers(l.Session, mcpServers)
	return l, nil
}

// replay sends the stored conversation as the editor saw it: each prompt,
// the model's reasoning and text, and each tool call with its title, kind,
// rawInput, final status and content (not its live output).
func (a *Agent) replay(ctx context.Context, s *sessions.Session, entries iter.Seq2[int, store.Entry]) {
	sid := s.ID
	names := map[string]string{}
	for _, e := range entries {
		p, err := e.Decode()
		if err != nil {
			continue
		}
		switch v := p.(type) {
		case store.Prompt:
			var blocks []acpsdk.ContentBlock
			if len(v.Blocks) == 0 || json.Unmarshal(v.Blocks, &blocks) != nil || len(blocks) == 0 {
				blocks = []acpsdk.ContentBlock{acpsdk.TextBlock(v.Text)}
			}
			restoreImages(s, blocks, v.Images)
			for _, b := range blocks {
				a.sendUpdate(ctx, sid, acpsdk.UpdateUserMessage(b))
			}
		case store.Assistant:
			// Replayed messages carry ids as live ones do: one for the
			// reasoning, one for the text.
			if v.Reasoning != "" {
				a.sendUpdate(ctx, sid, thoughtChunk(agent.Event{Text: v.Reasoning, MessageID: uuid.NewString()}))
			}
			if v.Text != "" {
				id := v.MessageID
				if id == "" {
					id = uuid.NewString()
				}
				a.sendUpdate(ctx, sid, messageChunk(agent.Event{Text: v.Text, MessageID: id}))
			}
			for _, c := range v.ToolCalls {
				names[c.ID] = c.Name
			}
		case store.ToolResult:
			if !v.Hidden {
				a.sendUpdate(ctx, sid, replayedCall(v, names[v.CallID]))
			}
		case store.Plan:
			a.sendUpdate(ctx, sid, planUpdate(sessions.PlanOf(v)))
		case store.Compaction:
			c := agent.Compaction{ID: v.CallID, Trigger: v.Trigger, Focus: v.Focus, KeptFrom: v.Replaced,
				PreTokens: int(v.PreTokens), PostTokens: int(v.PostTokens)}
			if c.ID == "" {
				c.ID = fmt.Sprintf("compact-%d", e.Seq)
			}
			start := compactionStart(c)
			start.ToolCall.Status = acpsdk.ToolCallStatusCompleted
			a.sendUpdate(ctx, sid, start)
			a.sendUpdate(ctx, sid, compactionEnd(c, nil))
		}
	}
}

func replayedCall(r store.ToolResult, name string) acpsdk.SessionUpdate {
	title := r.Title
	if title == "" {
		title = name
	}
	kind := acpsdk.ToolKind(r.ToolKind)
	if kind == "" {
		kind = acpsdk.ToolKindOther
	}
	status := acpsdk.ToolCallStatus(r.Status)
	if status == "" {
		status = acpsdk.ToolCallStatusCompleted
		if r.IsError {
			status = acpsdk.ToolCallStatusFailed
		}
	}
	opts := []acpsdk.ToolCallStartOpt{acpsdk.WithStartKind(kind), acpsdk.WithStartStatus(status)}
	if len(r.RawInput) > 0 {
		opts = append(opts, acpsdk.WithStartRawInput(r.RawInput))
	}
	var content []acpsdk.ToolCallContent
	if len(r.Content) == 0 || json.Unmarshal(r.Content, &content) != nil {
		content = []acpsdk.ToolCallContent{fenced(r.Text)}
	}
	opts = append(opts, acpsdk.WithStartContent(content))
	up := acpsdk.StartToolCall(acpsdk.ToolCallId(r.CallID), title, opts...)
	var locs []acpsdk.ToolCallLocation
	if len(r.Locations) > 0 && json.Unmarshal(r.Locations, &locs) == nil {
		// Set as is: WithStartLocations would add a path to rawInput.
		up.ToolCall.Locations = locs
	}
	return up
}

// restoreImages puts the stored images back into a prompt's image blocks,
// which were stored without their data (storedBlocks), in order.
func restoreImages(s *sessions.Session, blocks []acpsdk.ContentBlock, images []store.Image) {
	i := 0
	for _, b := range blocks {
		if b.Image == nil || b.Image.Data != "" || i >= len(images) {
			continue
		}
		if data, err := s.Image(images[i].Ref); err == nil {
			b.Image.Data = base64.StdEncoding.EncodeToString(data)
		}
		i++
	}
}
