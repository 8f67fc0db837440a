package acp

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

// liveTail bounds what is kept of a running command's output for display;
// the model's copy is bounded separately by the executor.
const liveTail = 32 << 10

// turnUI translates one turn's agent events into session/update
// notifications. Live output arrives on executor goroutines and is only
// buffered there; a per-command ticker coalesces it into a few updates per
// second, so a noisy build never floods the editor or stalls the pipe.
type turnUI struct {
	conn     client
	sid      acpsdk.SessionId
	terminal bool
	interval time.Duration
	// ctx outlives the turn's cancel: final updates after a cancel must
	// still reach the client (the SDK drops sends on a done context).
	ctx context.Context
	log *zap.Logger

	// sendMu orders sends from the turn goroutine and the tickers.
	sendMu sync.Mutex

	// mu guards live.
	mu   sync.Mutex
	live map[string]*liveCall
}

type liveCall struct {
	info agent.CallInfo
	// tail is the output so far (text mode), bounded by liveTail.
	tail []byte
	// pending is output not yet sent (terminal mode), bounded by liveTail.
	pending []byte
	dirty   bool
	stop    chan struct{}
	stopped chan struct{}
}

func newTurnUI(conn client, sid acpsdk.SessionId, terminal bool, interval time.Duration, ctx context.Context, log *zap.Logger) *turnUI {
	return &turnUI{conn: conn, sid: sid, terminal: terminal, interval: interval, ctx: ctx, log: log, live: map[string]*liveCall{}}
}

func (u *turnUI) send(up acpsdk.SessionUpdate) {
	u.sendMu.Lock()
	defer u.sendMu.Unlock()
	if err := u.conn.SessionUpdate(u.ctx, acpsdk.SessionNotification{SessionId: u.sid, Update: up}); err != nil {
		u.log.Debug("session update not delivered", zap.Error(err))
	}
}

// handle is the agent's Emit. It must not block for EventToolOutput.
func (u *turnUI) handle(e agent.Event) {
	switch e.Kind {
	case agent.EventText:
		u.send(acpsdk.UpdateAgentMessageText(e.Text))
	case agent.EventThought:
		u.send(acpsdk.UpdateAgentThoughtText(e.Text))
	case agent.EventToolCall:
		u.send(u.startCall(e.Call))
	case agent.EventToolRunning:
		u.send(acpsdk.UpdateToolCall(acpsdk.ToolCallId(e.Call.ID), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress)))
		u.startLive(e.Call)
	case agent.EventToolOutput:
		u.output(e.Call.ID, e.Data)
	case agent.EventToolResult:
		ran := u.stopLive(e.Call.ID, true)
		u.send(u.finishCall(e.Call, e.Result, ran))
	}
}

func (u *turnUI) usesTerminal(c agent.CallInfo) bool {
	return u.terminal && c.Call.Live
}

func descriptionContent(c agent.CallInfo) []acpsdk.ToolCallContent {
	if c.Call.Description == "" {
		return nil
	}
	return []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(c.Call.Description))}
}

// toolKind is the call's ACP kind; a tool that names none is "other".
func toolKind(c tools.Call) acpsdk.ToolKind {
	if c.Kind == "" {
		return acpsdk.ToolKindOther
	}
	return acpsdk.ToolKind(c.Kind)
}

func (u *turnUI) startCall(c agent.CallInfo) acpsdk.SessionUpdate {
	kind := toolKind(c.Call)
	title := c.Call.Title
	if title == "" {
		title = c.Name
	}
	up := acpsdk.StartToolCall(acpsdk.ToolCallId(c.ID), title,
		acpsdk.WithStartKind(kind),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending),
		acpsdk.WithStartRawInput(rawInput(c.Args)),
		acpsdk.WithStartContent(descriptionContent(c)),
	)
	if u.usesTerminal(c) {
		up.ToolCall.Content = append(up.ToolCall.Content, acpsdk.ToolTerminalRef(c.ID))
		up.ToolCall.Meta = map[string]any{"terminal_info": map[string]any{"terminal_id": c.ID, "cwd": c.Call.Cwd}}
	}
	return up
}

func (u *turnUI) startLive(c agent.CallInfo) {
	lc := &liveCall{info: c, stop: make(chan struct{}), stopped: make(chan struct{})}
	u.mu.Lock()
	u.live[c.ID] = lc
	u.mu.Unlock()
	go func() {
		defer close(lc.stopped)
		t := time.NewTicker(u.interval)
		defer t.Stop()
		for {
			select {
			case <-lc.stop:
				return
			case <-t.C:
				u.flush(lc)
			}
		}
	}()
}

// output buffers live output; it runs on executor goroutines and only
// copies bytes under a short lock.
func (u *turnUI) output(id string, p []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	lc := u.live[id]
	if lc == nil {
		return
	}
	if u.usesTerminal(lc.info) {
		lc.pending = appendTail(lc.pending, p, liveTail)
	} else {
		lc.tail = appendTail(lc.tail, p, liveTail)
	}
	lc.dirty = true
}

// appendTail appends p and keeps at most max bytes, the newest.
func appendTail(buf, p []byte, max int) []byte {
	if len(p) >= max {
		return append(buf[:0], p[len(p)-max:]...)
	}
	if over := len(buf) + len(p) - max; over > 0 {
		buf = append(buf[:0], buf[over:]...)
	}
	return append(buf, p...)
}

func (u *turnUI) flush(lc *liveCall) {
	u.mu.Lock()
	if !lc.dirty {
		u.mu.Unlock()
		return
	}
	lc.dirty = false
	var up acpsdk.SessionUpdate
	if u.usesTerminal(lc.info) {
		// Copy out before compacting: data aliases pending, and the carried
		// bytes of a split rune are moved over its start.
		data := string(validUTF8Prefix(lc.pending))
		lc.pending = append(lc.pending[:0], lc.pending[len(data):]...)
		up = acpsdk.UpdateToolCall(acpsdk.ToolCallId(lc.info.ID))
		up.ToolCallUpdate.Meta = map[string]any{"terminal_output": map[string]any{"terminal_id": lc.info.ID, "data": data}}
	} else {
		text := strings.ToValidUTF8(string(lc.tail), "")
		up = acpsdk.UpdateToolCall(acpsdk.ToolCallId(lc.info.ID),
			acpsdk.WithUpdateContent(append(descriptionContent(lc.info), fenced(text))))
	}
	u.mu.Unlock()
	u.send(up)
}

// validUTF8Prefix returns p up to the last complete rune, so a rune split
// across two reads is sent whole in the next update.
func validUTF8Prefix(p []byte) []byte {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return p[:i]
			}
			return p
		}
	}
	return p
}

// stopLive stops the call's ticker and, if asked, flushes what is buffered,
// so no live update can follow the final one. It reports whether the call
// had started running.
func (u *turnUI) stopLive(id string, flush bool) bool {
	u.mu.Lock()
	lc := u.live[id]
	delete(u.live, id)
	u.mu.Unlock()
	if lc == nil {
		return false
	}
	close(lc.stop)
	<-lc.stopped
	if flush && u.usesTerminal(lc.info) {
		u.flush(lc)
	}
	return true
}

// close stops every ticker still running (a turn that ended abnormally).
func (u *turnUI) close() {
	u.mu.Lock()
	ids := make([]string, 0, len(u.live))
	for id := range u.live {
		ids = append(ids, id)
	}
	u.mu.Unlock()
	for _, id := range ids {
		_ = u.stopLive(id, false)
	}
}

// finishCall builds the final update from the tool's result: its status,
// its raw output as the tool built it, and what the editor shows. A command
// that ran in Zed's terminal keeps it and reports its exit there, followed
// by the notes the terminal cannot show; anything else — a call that never
// ran (refused, bad arguments) or failed as infrastructure — shows its
// result text, after the terminal if there is one.
func (u *turnUI) finishCall(c agent.CallInfo, r tools.Result, ran bool) acpsdk.SessionUpdate {
	status := acpsdk.ToolCallStatusCompleted
	if r.IsError || r.Failed {
		status = acpsdk.ToolCallStatusFailed
	}
	opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(status)}
	if r.Raw != nil {
		opts = append(opts, acpsdk.WithUpdateRawOutput(r.Raw))
	}
	up := acpsdk.UpdateToolCall(acpsdk.ToolCallId(c.ID), opts...)
	terminal := u.usesTerminal(c) && ran
	if terminal {
		var code, sig any
		if e := r.Exit; e != nil {
			if e.Code != nil {
				code = *e.Code
			}
			if e.Signal != "" {
				sig = e.Signal
			}
		}
		up.ToolCallUpdate.Meta = map[string]any{"terminal_exit": map[string]any{"terminal_id": c.ID, "exit_code": code, "signal": sig}}
		if !r.IsError {
			if len(r.Notes) > 0 {
				up.ToolCallUpdate.Content = append(descriptionContent(c), acpsdk.ToolTerminalRef(c.ID), fenced(strings.Join(r.Notes, "\n")))
			}
			return up
		}
	}
	content := descriptionContent(c)
	if terminal {
		content = append(content, acpsdk.ToolTerminalRef(c.ID))
	}
	up.ToolCallUpdate.Content = append(content, fenced(r.Text))
	return up
}

// fenced shows text in a ```console block whose fence is longer than any
// run of backticks inside it, so command output cannot close it early.
func fenced(text string) acpsdk.ToolCallContent {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return acpsdk.ToolContent(acpsdk.TextBlock(fence + "console\n" + text + fence))
}
