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

// turnUI translates one turn's agent events into session/update
// notifications. Live output arrives on executor goroutines and is only
// buffered there; a per-command ticker coalesces it into a few updates per
// second, so a noisy build never floods the editor or stalls the pipe.
type turnUI struct {
	conn     client
	sid      acpsdk.SessionId
	terminal bool
	// ticker starts the update clock of one running command.
	ticker func() (ticks <-chan time.Time, stop func())
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
	// out is the output so far (text mode), or not yet sent (terminal
	// mode: each update carries an increment).
	out *liveOutput
	// sentLineEnd: the terminal output sent so far ends a line (or there
	// is none), so a skipped line needs no newline before it.
	sentLineEnd bool
	dirty       bool
	stop        chan struct{}
	stopped     chan struct{}
}

func newTurnUI(conn client, sid acpsdk.SessionId, terminal bool, ticker func() (<-chan time.Time, func()), ctx context.Context, log *zap.Logger) *turnUI {
	return &turnUI{conn: conn, sid: sid, terminal: terminal, ticker: ticker, ctx: ctx, log: log, live: map[string]*liveCall{}}
}

// intervalTicker is the update clock of Options.UpdateInterval.
func intervalTicker(d time.Duration) func() (<-chan time.Time, func()) {
	return func() (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
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
	if e.Call.Call.Hidden {
		// A call with a display of its own (a plan): no tool call.
		return
	}
	switch e.Kind {
	case agent.EventText:
		u.send(messageChunk(e))
	case agent.EventThought:
		u.send(thoughtChunk(e))
	case agent.EventToolCall:
		u.send(u.startCall(e.Call))
	case agent.EventToolRunning:
		u.send(acpsdk.UpdateToolCall(acpsdk.ToolCallId(e.Call.ID), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress)))
		u.startLive(e.Call)
	case agent.EventToolOutput:
		u.output(e.Call.ID, e.Output)
	case agent.EventToolResult:
		lc := u.stopLive(e.Call.ID, true)
		u.send(u.finishCall(e.Call, e.Result, lc))
	case agent.EventUsage:
		u.send(usageUpdate(e.Usage))
	case agent.EventCompactionStart:
		u.send(compactionStart(e.Compaction))
	case agent.EventCompactionEnd:
		u.send(compactionEnd(e.Compaction, e.Err))
	case agent.EventPlan:
		u.send(planUpdate(e.Plan))
	case agent.EventInstructions:
		u.send(instructionsCall(e.Instructions))
	}
}

func (u *turnUI) usesTerminal(c agent.CallInfo) bool {
	return u.terminal && c.Call.Live
}

// headContent is what the editor shows of a call above its output: the
// model's description of it, and the whole command as a code block when
// the title shows only part of it (its first line), so every line of what
// runs stays in view with the call.
func headContent(c agent.CallInfo) []acpsdk.ToolCallContent {
	var out []acpsdk.ToolCallContent
	if c.Call.Description != "" {
		out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(c.Call.Description)))
	}
	if c.Call.Body != "" {
		out = append(out, codeBlock("sh", c.Call.Body))
	}
	return out
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
		acpsdk.WithStartContent(headContent(c)),
	)
	if u.usesTerminal(c) {
		up.ToolCall.Content = append(up.ToolCall.Content, acpsdk.ToolTerminalRef(c.ID))
		up.ToolCall.Meta = map[string]any{"terminal_info": map[string]any{"terminal_id": c.ID, "cwd": c.Call.Cwd}}
	}
	return up
}

func (u *turnUI) startLive(c agent.CallInfo) {
	lc := &liveCall{info: c, out: newLiveOutput(liveTail), sentLineEnd: true, stop: make(chan struct{}), stopped: make(chan struct{})}
	u.mu.Lock()
	u.live[c.ID] = lc
	u.mu.Unlock()
	ticks, stopTicks := u.ticker()
	go func() {
		defer close(lc.stopped)
		defer stopTicks()
		for {
			select {
			case <-lc.stop:
				return
			case <-ticks:
				u.flush(lc)
			}
		}
	}()
}

// output buffers live output; it runs on executor goroutines and only
// copies bytes under a short lock. Reads of both streams are kept in the
// order they arrive here.
func (u *turnUI) output(id string, c tools.Chunk) {
	u.mu.Lock()
	defer u.mu.Unlock()
	lc := u.live[id]
	if lc == nil {
		return
	}
	lc.out.add(c)
	lc.dirty = true
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
		var data string
		data, lc.sentLineEnd = lc.out.render(lc.sentLineEnd)
		lc.out.reset()
		if data == "" {
			// Only the start of a rune arrived: it goes with its end.
			u.mu.Unlock()
			return
		}
		up = acpsdk.UpdateToolCall(acpsdk.ToolCallId(lc.info.ID))
		up.ToolCallUpdate.Meta = map[string]any{"terminal_output": map[string]any{"terminal_id": lc.info.ID, "data": data}}
	} else {
		up = acpsdk.UpdateToolCall(acpsdk.ToolCallId(lc.info.ID),
			acpsdk.WithUpdateContent(append(headContent(lc.info), fenced(u.shownText(lc)))))
	}
	u.mu.Unlock()
	u.send(up)
}

// shownText is what the fenced block of a call without a terminal shows
// while it runs. The caller holds u.mu.
func (u *turnUI) shownText(lc *liveCall) string {
	text, _ := lc.out.render(true)
	return strings.ToValidUTF8(text, "")
}

// stopLive stops the call's ticker and, if asked, flushes what is buffered,
// so no live update can follow the final one. It returns the call's live
// state, nil if the call had not started running; no output reaches it
// any more.
func (u *turnUI) stopLive(id string, flush bool) *liveCall {
	u.mu.Lock()
	lc := u.live[id]
	delete(u.live, id)
	u.mu.Unlock()
	if lc == nil {
		return nil
	}
	close(lc.stop)
	<-lc.stopped
	if flush && u.usesTerminal(lc.info) {
		u.flush(lc)
	}
	return lc
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
		u.stopLive(id, false)
	}
}

// finishCall builds the final update from the tool's result: its status,
// its raw output as the tool built it, and what the editor shows. A command
// that ran in Zed's terminal keeps it and reports its exit there, followed
// by the notes the terminal cannot show; anything else — a call that never
// ran (refused, bad arguments) or failed as infrastructure — shows its
// result text, after the live output it showed if there is any (the
// terminal, or the output of an aborted command). lc is the call's live
// state from stopLive, nil if it never ran.
func (u *turnUI) finishCall(c agent.CallInfo, r tools.Result, lc *liveCall) acpsdk.SessionUpdate {
	up := acpsdk.UpdateToolCall(acpsdk.ToolCallId(c.ID), finishOpts(r)...)
	terminal := u.usesTerminal(c) && lc != nil
	if terminal {
		up.ToolCallUpdate.Meta = terminalExit(c.ID, r.Exit)
		if !r.IsError {
			up.ToolCallUpdate.Content = append(terminalContent(c, r), changeContent(r.Changes)...)
			return up
		}
	}
	content := headContent(c)
	switch {
	case terminal:
		content = append(content, acpsdk.ToolTerminalRef(c.ID))
	case r.IsError && lc != nil:
		// The model's text of an error says nothing of the output the
		// editor showed until then: keep it above the error.
		u.mu.Lock()
		shown := u.shownText(lc)
		u.mu.Unlock()
		if shown != "" {
			content = append(content, fenced(shown))
		}
	}
	up.ToolCallUpdate.Content = append(append(content, fenced(r.Text)), changeContent(r.Changes)...)
	return up
}

// finishOpts are a finished call's status, raw output and locations.
func finishOpts(r tools.Result) []acpsdk.ToolCallUpdateOpt {
	status := acpsdk.ToolCallStatusCompleted
	if r.IsError || r.Failed {
		status = acpsdk.ToolCallStatusFailed
	}
	opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(status)}
	if r.Raw != nil {
		opts = append(opts, acpsdk.WithUpdateRawOutput(r.Raw))
	}
	if locs := locations(r.Locations); len(locs) > 0 {
		opts = append(opts, acpsdk.WithUpdateLocations(locs))
	}
	return opts
}

// terminalExit is the _meta that reports a command's exit in Zed's
// terminal id.
func terminalExit(id string, e *tools.Exit) map[string]any {
	var code, sig any
	if e != nil {
		if e.Code != nil {
			code = *e.Code
		}
		if e.Signal != "" {
			sig = e.Signal
		}
	}
	return map[string]any{"terminal_exit": map[string]any{"terminal_id": id, "exit_code": code, "signal": sig}}
}

// terminalContent is what a command that ran in the terminal shows when it
// finished: the terminal keeps its place (no content) unless notes the
// terminal cannot show, or changes shown below it, make it restate it.
func terminalContent(c agent.CallInfo, r tools.Result) []acpsdk.ToolCallContent {
	switch {
	case len(r.Notes) > 0:
		return append(headContent(c), acpsdk.ToolTerminalRef(c.ID), fenced(strings.Join(r.Notes, "\n")))
	case len(r.Changes) > 0:
		return append(headContent(c), acpsdk.ToolTerminalRef(c.ID))
	}
	return nil
}

// changeContent is what a call changed, below its output: a diff per text
// file, a text line for the rest.
func changeContent(cs []tools.Change) []acpsdk.ToolCallContent {
	var out []acpsdk.ToolCallContent
	for _, c := range cs {
		if c.Line != "" {
			out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(tools.Visible(c.Line))))
			continue
		}
		if !utf8.ValidString(c.Path) {
			// JSON carries only UTF-8: sent as it is, the path would
			// arrive with U+FFFD for each bad byte and name no file. A
			// line names it, its bytes escaped, and says so.
			out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(tools.Visible(c.Path)+": changed (its name is not UTF-8, so the editor cannot open it)")))
			continue
		}
		if c.OldText == nil {
			out = append(out, acpsdk.ToolDiffContent(c.Path, c.NewText))
			continue
		}
		out = append(out, acpsdk.ToolDiffContent(c.Path, c.NewText, *c.OldText))
	}
	return out
}

// locations are the files a call changed, for the editor to follow.
func locations(ls []tools.Location) []acpsdk.ToolCallLocation {
	var out []acpsdk.ToolCallLocation
	for _, l := range ls {
		if !utf8.ValidString(l.Path) {
			// No editor could follow it (see changeContent).
			continue
		}
		out = append(out, acpsdk.ToolCallLocation{Path: l.Path, Line: l.Line})
	}
	return out
}

// fenced shows text in a ```console block.
func fenced(text string) acpsdk.ToolCallContent { return codeBlock("console", text) }

// codeBlock shows text in a fenced block of the language lang whose fence
// is longer than any run of backticks inside it, so neither a command nor
// its output can close it early.
func codeBlock(lang, text string) acpsdk.ToolCallContent {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return acpsdk.ToolContent(acpsdk.TextBlock(fence + lang + "\n" + text + fence))
}
