package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// run executes every step in order; the first failing step stops the
// scenario.
func (h *harness) run() error {
	for _, s := range h.sc.steps {
		if err := h.do(s); err != nil {
			return fmt.Errorf("%v: %w", s, err)
		}
	}
	return nil
}

func (h *harness) do(s step) error {
	switch s.Op {
	case "initialize":
		params := s.Params
		if params == nil {
			params = json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}}`)
		}
		var caps struct {
			ClientCapabilities struct {
				Fs struct {
					WriteTextFile bool `json:"writeTextFile"`
				} `json:"fs"`
			} `json:"clientCapabilities"`
		}
		_ = json.Unmarshal(params, &caps)
		h.writesFiles.Store(caps.ClientCapabilities.Fs.WriteTextFile)
		_, err := h.callWait("initialize", params)
		return err
	case "new_session":
		if s.As == "" || s.Cwd == "" {
			return errors.New(`new_session needs "as" and "cwd"`)
		}
		if _, dup := h.sessions[s.As]; dup {
			return fmt.Errorf("session %q already exists", s.As)
		}
		params, err := h.sessionParams(s)
		if err != nil {
			return err
		}
		res, err := h.callWait("session/new", params)
		if err != nil {
			return err
		}
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
			return fmt.Errorf("session/new answered %s", res)
		}
		h.sessions[s.As] = r.SessionID
		// The agent announces its commands right after the reply; waiting
		// for them keeps the record in one order.
		if err := h.awaitUpdate(step{Session: s.As, Match: json.RawMessage(`{"sessionUpdate":"available_commands_update"}`)}); err != nil {
			return err
		}
		if s.Mode != "" {
			_, err = h.callWait("session/set_mode", map[string]any{"sessionId": r.SessionID, "modeId": s.Mode})
		}
		return err
	case "fork":
		// session/fork of Session as As, in Cwd; the fork's commands are
		// announced after the reply, as a new session's.
		if s.As == "" || s.Cwd == "" || s.Session == "" {
			return errors.New(`fork needs "session", "as" and "cwd"`)
		}
		params, err := h.sessionParams(s)
		if err != nil {
			return err
		}
		params["sessionId"] = h.sid(s.Session)
		res, err := h.callWait("session/fork", params)
		if err != nil {
			return err
		}
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
			return fmt.Errorf("session/fork answered %s", res)
		}
		h.sessions[s.As] = r.SessionID
		return h.awaitUpdate(step{Session: s.As, Match: json.RawMessage(`{"sessionUpdate":"session_info_update"}`)})
	case "set_mode":
		_, err := h.callWait("session/set_mode", map[string]any{"sessionId": h.sid(s.Session), "modeId": s.Mode})
		return err
	case "prompt":
		var blocks any = []any{map[string]any{"type": "text", "text": s.Text}}
		if s.Blocks != nil {
			blocks = s.Blocks
		}
		params := map[string]any{"sessionId": h.sid(s.Session), "prompt": blocks}
		c, err := h.call("session/prompt", params)
		if err != nil {
			return err
		}
		if s.Wait == nil || *s.Wait {
			_, err := h.wait(c)
			return err
		}
		return h.remember(s.ID, c)
	case "request":
		var params any
		if s.Params != nil {
			if err := json.Unmarshal(s.Params, &params); err != nil {
				return err
			}
			if m, ok := params.(map[string]any); ok {
				if alias, ok := m["sessionId"].(string); ok {
					m["sessionId"] = h.sid(alias)
				}
			}
		}
		c, err := h.call(s.Method, params)
		if err != nil {
			return err
		}
		if s.Wait == nil || *s.Wait {
			_, err := h.wait(c)
			return err
		}
		return h.remember(s.ID, c)
	case "wait":
		c := h.calls[s.ID]
		if c == nil {
			return fmt.Errorf("no request with id %q", s.ID)
		}
		_, err := h.wait(c)
		return err
	case "cancel":
		return h.conn.Notify(h.ctx, "session/cancel", map[string]any{"sessionId": h.sid(s.Session)})
	case "close_session":
		_, err := h.callWait("session/close", map[string]any{"sessionId": h.sid(s.Session)})
		return err
	case "await_update":
		return h.awaitUpdate(s)
	case "permission", "elicit":
		a := permAnswer{method: "session/request_permission", answer: s.Answer, values: s.Values}
		if s.Op == "elicit" {
			a.method = "elicitation/create"
		}
		if s.Session != "" {
			a.session = h.sid(s.Session)
		}
		h.permMu.Lock()
		h.answers = append(h.answers, a)
		h.permMu.Unlock()
		h.answerPermissions(h.conn)
		return nil
	case "raw":
		return h.raw(s)
	case "close_stdin":
		return h.in.Close()
	case "expect_exit":
		want := 0
		if s.Code != nil {
			want = *s.Code
		}
		if err := h.waitExit(); err != nil {
			return err
		}
		h.exitSeen = true
		if h.exitCode != want {
			return fmt.Errorf("exit code %d, want %d", h.exitCode, want)
		}
		return nil
	case "write_file":
		content := ""
		if s.Content != nil {
			content = *s.Content
		}
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(s.Path, []byte(content), 0o644)
	case "wait_file":
		return h.poll(func() bool {
			b, err := os.ReadFile(s.Path)
			return err == nil && len(b) > 0 && bytes.HasSuffix(b, []byte("\n"))
		})
	case "wait_log":
		// The agent's log is the one place that says when a session's
		// MCP servers have listed their tools.
		return h.poll(func() bool {
			b, err := os.ReadFile(h.logPath)
			return err == nil && bytes.Contains(b, []byte(s.Text))
		})
	case "expect_no_file":
		if _, err := os.Stat(s.Path); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s exists (or cannot be checked: %v)", s.Path, err)
		}
		return nil
	case "await_procs":
		return h.awaitProcs(s.Mark, max(s.Count, 1))
	case "expect_gone":
		return h.waitGone(s.Mark, goneTimeout)
	case "check_spill":
		return h.checkSpill(s.Equals)
	case "restart":
		return h.restart()
	case "tear":
		// The agent killed mid-write: half a line at the end of the
		// session's file.
		f, err := os.OpenFile(filepath.Join(h.root, "home", ".local", "state", "dsh-acp", "sessions", h.sid(s.Session)+".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(`{"seq":999,"kind":"prompt","da`)
		return errors.Join(err, f.Close())
	}
	return fmt.Errorf("unknown op %q", s.Op)
}

// sessionParams are the params of new_session's or fork's request: the
// cwd and the roots (made first), the MCP servers ([] when none).
func (h *harness) sessionParams(s step) (map[string]any, error) {
	for _, d := range append([]string{s.Cwd}, s.Roots...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var servers any = []any{}
	if len(s.MCPServers) > 0 {
		servers = s.MCPServers
	}
	params := map[string]any{"cwd": s.Cwd, "mcpServers": servers}
	if len(s.Roots) > 0 {
		params["additionalDirectories"] = s.Roots
	}
	return params, nil
}

// sid maps a session alias to its id; anything else is used as the id
// itself (to talk about sessions that do not exist).
func (h *harness) sid(alias string) string {
	if id, ok := h.sessions[alias]; ok {
		return id
	}
	return alias
}

func (h *harness) remember(id string, c *pendingCall) error {
	if id == "" {
		return errors.New(`a request that is not waited for needs an "id" to wait for later`)
	}
	if _, dup := h.calls[id]; dup {
		return fmt.Errorf("id %q used twice", id)
	}
	h.calls[id] = c
	return nil
}

// call sends a request with the next id (ids are picked, never 0: the
// client reads a null id as 0).
func (h *harness) call(method string, params any) (*pendingCall, error) {
	id := h.nextID
	h.nextID++
	w, err := h.conn.DispatchCall(h.ctx, method, params, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	return &pendingCall{method: method, w: w}, nil
}

// wait returns the call's result. An error response is not a failure: the
// golden transcript says whether it was expected. A lost connection is.
func (h *harness) wait(c *pendingCall) (json.RawMessage, error) {
	if !c.done {
		var res json.RawMessage
		err := c.w.Wait(h.ctx, &res)
		c.done, c.result, c.err = true, res, err
	}
	var rpcErr *jsonrpc2.Error
	if c.err != nil && !errors.As(c.err, &rpcErr) {
		return nil, fmt.Errorf("%s: %w", c.method, c.err)
	}
	return c.result, nil
}

func (h *harness) callWait(method string, params any) (json.RawMessage, error) {
	c, err := h.call(method, params)
	if err != nil {
		return nil, err
	}
	return h.wait(c)
}

// awaitUpdate waits for the next session/update of the session, after the
// one the previous await_update of that session matched, whose update
// contains s.Match.
func (h *harness) awaitUpdate(s step) error {
	var want any
	if err := json.Unmarshal(s.Match, &want); err != nil {
		return fmt.Errorf("match: %w", err)
	}
	sid := h.sid(s.Session)
	// A request of the agent's scoped to the session (elicitation/create)
	// is matched on its params.
	method := "session/update"
	if s.Method != "" {
		method = s.Method
	}
	err := h.wire.waitFor(h.ctx, func(frames []frame) bool {
		for i := h.cursors[s.Session]; i < len(frames); i++ {
			f := frames[i]
			if f.dir != fromAgent || !f.ok {
				continue
			}
			m, _ := f.val.(map[string]any)
			if m["method"] != method {
				continue
			}
			p, _ := m["params"].(map[string]any)
			if p["sessionId"] != sid {
				continue
			}
			got := any(p)
			if method == "session/update" {
				got = p["update"]
			}
			if contains(got, want) {
				h.cursors[s.Session] = i + 1
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("no matching update: %w", err)
	}
	return nil
}

// contains reports whether got has every field of want: objects match
// field by field, arrays element by element, numbers by value, anything
// else by equality.
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !contains(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	case float64:
		switch g := got.(type) {
		case json.Number:
			f, err := g.Float64()
			return err == nil && f == w
		case float64:
			return g == w
		}
		return false
	}
	return reflect.DeepEqual(got, want)
}

// raw writes a line past the JSON-RPC client and waits for the reply with
// reply_id (default null: the id of an unreadable request).
func (h *harness) raw(s step) error {
	want := json.RawMessage("null")
	if s.ReplyID != nil {
		want = s.ReplyID
	}
	var wantID any
	if err := json.Unmarshal(want, &wantID); err != nil {
		return fmt.Errorf("reply_id: %w", err)
	}
	before, _ := h.wire.snapshot()
	if _, err := h.in.write([]byte(s.Line+"\n"), true); err != nil {
		return err
	}
	return h.wire.waitFor(h.ctx, func(frames []frame) bool {
		for _, f := range frames[len(before):] {
			m, _ := f.val.(map[string]any)
			if f.dir != fromAgent || m == nil || m["method"] != nil {
				continue
			}
			if id, ok := m["id"]; ok && contains(id, wantID) {
				return true
			}
		}
		return false
	})
}

// poll checks cond every pollInterval until it holds: for handshakes
// through the file system, which sends no event.
func (h *harness) poll(cond func() bool) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for !cond() {
		select {
		case <-h.ctx.Done():
			return h.ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (h *harness) waitExit() error {
	select {
	case <-h.exited:
		return nil
	case <-time.After(exitTimeout):
		return fmt.Errorf("dsh-acp still runs %v later", exitTimeout)
	}
}

// awaitProcs waits until at least n of the scenario's live processes carry
// mark.
func (h *harness) awaitProcs(mark string, n int) error {
	err := h.poll(func() bool { return len(findProcs(h.tokens, mark)) >= n })
	if err != nil {
		return fmt.Errorf("waiting for %d processes marked %s, found %v: %w", n, mark, findProcs(h.tokens, mark), err)
	}
	return nil
}

// waitGone waits until none of the scenario's processes carries mark, or,
// with mark "", until none is left at all.
func (h *harness) waitGone(mark string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		left := findProcs(h.tokens, mark)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			what := "marked " + mark
			if mark == "" {
				what = "of the scenario"
			}
			return fmt.Errorf("processes %s still running after %v: %v", what, within, left)
		}
		time.Sleep(pollInterval)
	}
}

// waitPidsGone waits until every pid the tracker saw is gone.
func (h *harness) waitPidsGone(seen map[int]procStat, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var alive []string
		for pid, st := range seen {
			if h.tracker.alive(pid, st.start) {
				alive = append(alive, describePid(pid))
			}
		}
		if len(alive) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still running after %v: %s", within, strings.Join(alive, ", "))
		}
		time.Sleep(pollInterval)
	}
}

// leftBehind checks, once the binary has exited, that nothing it started
// is left: neither a process the tracker saw descend from it, nor any
// process carrying the scenario's token (wherever it was re-parented, in
// whatever PID namespace). Its executor waited for every group it started,
// so only a zombie waiting to be reaped may still show.
func (h *harness) leftBehind() error {
	stopTracking(h.tracker)
	seen := h.tracker.seenPids()
	err := errors.Join(h.waitPidsGone(seen, exitGrace), h.waitGone("", exitGrace))
	if err == nil {
		return nil
	}
	for pid, st := range seen {
		if h.tracker.alive(pid, st.start) {
			_ = killPid(pid)
		}
	}
	for _, p := range findProcs(h.tokens, "") {
		_ = killPid(p.pid)
	}
	return err
}

// checkSpill checks the spill files named by the latest finished tool call
// that has any: private modes, and the stdout file holds exactly what
// equals_cmd prints.
func (h *harness) checkSpill(equalsCmd string) error {
	frames, _ := h.wire.snapshot()
	var paths []string
	for i := len(frames) - 1; i >= 0 && paths == nil; i-- {
		m, _ := frames[i].val.(map[string]any)
		p, _ := m["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		ro, _ := u["rawOutput"].(map[string]any)
		sp, _ := ro["spillPaths"].([]any)
		for _, x := range sp {
			if s, ok := x.(string); ok {
				paths = append(paths, s)
			}
		}
	}
	if len(paths) == 0 {
		return errors.New("no tool result named a spill file")
	}
	want, err := exec.Command("bash", "-c", equalsCmd).Output()
	if err != nil {
		return fmt.Errorf("equals_cmd: %w", err)
	}
	checked := false
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
		if fi.Mode().Perm() != 0o600 {
			return fmt.Errorf("spill file %s has mode %v, want 0600", p, fi.Mode().Perm())
		}
		di, err := os.Stat(filepath.Dir(p))
		if err != nil {
			return err
		}
		if di.Mode().Perm() != 0o700 {
			return fmt.Errorf("spill dir %s has mode %v, want 0700", filepath.Dir(p), di.Mode().Perm())
		}
		if !strings.Contains(filepath.Base(p), "stdout") {
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("spill file %s holds %d bytes, want the %d bytes of %q", p, len(got), len(want), equalsCmd)
		}
		checked = true
	}
	if !checked {
		return fmt.Errorf("no stdout spill file among %q", paths)
	}
	return nil
}

// restart stops the binary as an editor does (stdin closed: it must exit 0
// and leave no process behind) and starts it again on the same $TMP, so on
// the same state directory. Aliases stay: a loaded session keeps its id.
func (h *harness) restart() error {
	h.in.Close()
	if err := h.waitExit(); err != nil {
		return err
	}
	if h.exitCode != 0 {
		return fmt.Errorf("dsh-acp exited with code %d before the restart, want 0", h.exitCode)
	}
	select {
	case <-h.conn.DisconnectNotify():
	case <-time.After(exitTimeout):
		return errors.New("the client did not see stdout close")
	}
	h.conn.Close()
	if err := h.leftBehind(); err != nil {
		return fmt.Errorf("left behind by the first process: %w", err)
	}
	if h.sc.restartScript != nil {
		h.scriptPath = filepath.Join(h.root, "restart.jsonl")
		if err := os.WriteFile(h.scriptPath, h.sc.restartScript, 0o644); err != nil {
			return err
		}
	}
	h.spawn()
	return nil
}

// finish ends the scenario: stdin is closed (if a step did not), the
// binary must exit 0 (unless expect_exit checked otherwise), and every
// process it spawned must be gone. It returns what went wrong.
func (h *harness) finish() []error {
	var errs []error
	h.in.Close()
	if err := h.waitExit(); err != nil {
		errs = append(errs, err)
		h.cmd.Process.Kill()
		<-h.exited
	} else if !h.exitSeen && h.exitCode != 0 {
		errs = append(errs, fmt.Errorf("dsh-acp exited with code %d, want 0", h.exitCode))
	}
	// stdout reaches EOF once the binary is gone; then the client stops.
	select {
	case <-h.conn.DisconnectNotify():
	case <-time.After(exitTimeout):
		errs = append(errs, errors.New("the client did not see stdout close"))
	}
	h.conn.Close()

	if err := h.leftBehind(); err != nil {
		errs = append(errs, fmt.Errorf("left behind: %w", err))
	}
	h.logCopy.close()
	return errs
}

func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// modelRequests reads the --script-record file.
func (h *harness) modelRequests() ([]byte, error) {
	b, err := os.ReadFile(h.record)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// diagnostics is what a failing scenario prints: stderr and the log tail.
func (h *harness) diagnostics() string {
	var b strings.Builder
	if s := h.stderr.String(); s != "" {
		fmt.Fprintf(&b, "dsh-acp stderr:\n%s\n", s)
	}
	if s := h.clientLog.String(); s != "" {
		fmt.Fprintf(&b, "client log:\n%s\n", s)
	}
	if log, err := os.ReadFile(h.logPath); err == nil {
		lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "dsh-acp log (last %d lines):\n%s\n", len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

var _ = context.Background
