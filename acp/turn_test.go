package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// realDir resolves symlinks so a directory compares equal to what pwd prints.
func realDir(t *testing.T, dir string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// finalText waits for the final update of tool call id and returns its
// content text.
func (h *harness) finalText(sid acpsdk.SessionId, id string) (string, acpsdk.ToolCallStatus) {
	h.t.Helper()
	u := h.client.waitUpdate(h.t, h.ctx, sid, "final update of "+id, isFinal(id))
	return contentText(u.ToolCallUpdate.Content), *u.ToolCallUpdate.Status
}

// livePID waits for a live-output update of tool call id whose console
// block holds a pid line, and returns the pid.
func (h *harness) livePID(sid acpsdk.SessionId, id string) int {
	h.t.Helper()
	var pid int
	h.client.waitUpdate(h.t, h.ctx, sid, "the pid of "+id, func(u acpsdk.SessionUpdate) bool {
		tu := u.ToolCallUpdate
		if tu == nil || string(tu.ToolCallId) != id {
			return false
		}
		txt := contentText(tu.Content)
		_, after, ok := strings.Cut(txt, "```console\n")
		if !ok {
			return false
		}
		line, _, _ := strings.Cut(after, "\n")
		_, err := fmt.Sscanf(line, "%d", &pid)
		return err == nil && pid > 0
	})
	return pid
}

// TestSessionsRunInTheirOwnCwdWithoutBlockingEachOther: session A's command
// blocks on a fifo that is only opened after session B's whole prompt
// completed, so B cannot have waited for A.
func TestSessionsRunInTheirOwnCwdWithoutBlockingEachOther(t *testing.T) {
	t.Parallel()
	gate := fifo(t)
	h := newHarness(t, harnessOptions{provider: script{
		"in A": steps(bash("a1", "pwd; cat "+gate+" >/dev/null; echo released")),
		"in B": steps(bash("b1", "pwd")),
	}})
	sidA, dirA := h.newSession(sessions.ModeAuto)
	sidB, dirB := h.newSession(sessions.ModeAuto)

	doneA := h.promptAsync(sidA, "in A")
	h.client.waitUpdate(t, h.ctx, sidA, "A's command to run", isStatus("a1", acpsdk.ToolCallStatusInProgress))

	respB, err := h.prompt(sidB, "in B")
	if err != nil {
		t.Fatal(err)
	}
	if respB.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("B stop reason = %q", respB.StopReason)
	}
	textB, statusB := h.finalText(sidB, "b1")
	if statusB != acpsdk.ToolCallStatusCompleted || !strings.Contains(textB, realDir(t, dirB)+"\n") {
		t.Errorf("B's pwd result (%s) = %q, want %s", statusB, textB, dirB)
	}
	select {
	case r := <-doneA:
		t.Fatalf("A finished before its gate opened: %+v", r)
	default:
	}

	release(t, h.ctx, gate)
	rA := h.await(doneA, "A's prompt")
	if rA.err != nil || rA.resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("A = %+v, %v; want end_turn", rA.resp, rA.err)
	}
	textA, statusA := h.finalText(sidA, "a1")
	if statusA != acpsdk.ToolCallStatusCompleted || !strings.Contains(textA, realDir(t, dirA)+"\nreleased\n") {
		t.Errorf("A's result (%s) = %q, want %s then released", statusA, textA, dirA)
	}
	// Updates never cross sessions.
	if len(toolUpdates(h.client.updatesOf(sidA), "b1")) != 0 || len(toolUpdates(h.client.updatesOf(sidB), "a1")) != 0 {
		t.Error("a tool update was sent to the wrong session")
	}
}

// TestPendingPermissionDoesNotBlockOtherSessions: while session A waits for
// the user, session/new and a whole prompt of session B go through.
func TestPendingPermissionDoesNotBlockOtherSessions(t *testing.T) {
	t.Parallel()
	var sidA atomic.Value
	releaseA := make(chan struct{})
	h := newHarness(t, harnessOptions{
		provider: script{
			"ask A": steps(bash("a1", "echo from A")),
			"ask B": steps(bash("b1", "echo from B")),
		},
		onPermission: func(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			if r.SessionId == sidA.Load() {
				select {
				case <-releaseA:
				case <-ctx.Done():
					return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
				}
			}
			return selected("allow_once"), nil
		},
	})
	a, _ := h.newSession(sessions.ModeAsk)
	sidA.Store(a)
	doneA := h.promptAsync(a, "ask A")
	h.client.waitUntil(t, h.ctx, "A's permission request", func(_ []acpsdk.SessionNotification, perms []acpsdk.RequestPermissionRequest) bool {
		return len(perms) > 0 && perms[0].SessionId == a
	})

	b, _ := h.newSession(sessions.ModeAsk) // session/new is not delayed
	respB, err := h.prompt(b, "ask B")
	if err != nil || respB.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("B = %+v, %v; want end_turn while A waits", respB, err)
	}
	if txt, _ := h.finalText(b, "b1"); !strings.Contains(txt, "from B") {
		t.Errorf("B's result = %q", txt)
	}
	select {
	case r := <-doneA:
		t.Fatalf("A finished while its permission request was pending: %+v", r)
	default:
	}
	close(releaseA)
	rA := h.await(doneA, "A's prompt")
	if rA.err != nil || rA.resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("A = %+v, %v", rA.resp, rA.err)
	}
	if txt, _ := h.finalText(a, "a1"); !strings.Contains(txt, "from A") {
		t.Errorf("A's result = %q", txt)
	}
}

// TestCancelKillsForegroundCommand: session/cancel during a long command
// ends the prompt "cancelled" without error, the command's process is gone
// by then, the final failed update reached the client first, and the
// session's background task keeps running.
func TestCancelKillsForegroundCommand(t *testing.T) {
	t.Parallel()
	bgPIDFile := filepath.Join(t.TempDir(), "bg.pid")
	h := newHarness(t, harnessOptions{provider: script{
		"long": steps(
			bash("bg", "echo $$ > "+bgPIDFile+"; exec sleep 1000", "run_in_background", true),
			bash("fg", "echo $$; exec sleep 1000"),
		),
		"after": steps(text("still here")),
	}})
	sid, _ := h.newSession(sessions.ModeAuto)
	done := h.promptAsync(sid, "long")
	pid := h.livePID(sid, "fg")
	bgPID := atoi(t, testutil.WaitFile(t, h.ctx, bgPIDFile))

	h.cancel(sid)
	r := h.await(done, "the cancelled prompt")
	if r.err != nil {
		t.Fatalf("cancelled prompt answered an error: %v", r.err)
	}
	if r.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason = %q, want cancelled", r.resp.StopReason)
	}
	if !testutil.Gone(pid) {
		t.Errorf("foreground process %d still exists after the prompt answered", pid)
	}
	// The final update was delivered before the prompt's answer.
	ups := toolUpdates(h.client.updatesOf(sid), "fg")
	last := ups[len(ups)-1]
	if last.Status == nil || *last.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(contentText(last.Content), "Error: command aborted") {
		t.Errorf("last update of the command = %+v, want failed with command aborted", last)
	}
	if testutil.Gone(bgPID) {
		t.Errorf("background task %d was killed by a cancel", bgPID)
	}
	// The session goes on, and the model hears the abort.
	if resp, err := h.prompt(sid, "after"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after cancel = %+v, %v", resp, err)
	}
	s, err := h.reg.Get(string(sid))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range s.History() {
		if m.Role == agent.RoleTool && m.ToolCallID == "fg" {
			found = m.Content == "Error: command aborted"
		}
	}
	if !found {
		t.Errorf("history lacks the aborted result: %+v", s.History())
	}
}

// TestCancelReturnsAtOnce: a turn that is slow to wind down after its cancel
// must not hold up the session/cancel of another session (the SDK handles
// notifications one at a time).
func TestCancelReturnsAtOnce(t *testing.T) {
	t.Parallel()
	entered := make(chan string, 2)
	holdA := make(chan struct{})
	h := newHarness(t, harnessOptions{provider: script{
		"slow to stop": func(ctx context.Context, _ int, _ agent.Request, _ func(agent.Delta)) (agent.Response, error) {
			entered <- "A"
			<-ctx.Done()
			<-holdA
			return agent.Response{}, ctx.Err()
		},
		"quick to stop": func(ctx context.Context, _ int, _ agent.Request, _ func(agent.Delta)) (agent.Response, error) {
			entered <- "B"
			<-ctx.Done()
			return agent.Response{}, ctx.Err()
		},
	}})
	defer func() {
		select {
		case <-holdA:
		default:
			close(holdA)
		}
	}()
	a, _ := h.newSession(sessions.ModeAuto)
	b, _ := h.newSession(sessions.ModeAuto)
	doneA := h.promptAsync(a, "slow to stop")
	doneB := h.promptAsync(b, "quick to stop")
	for range 2 {
		select {
		case <-entered:
		case <-h.ctx.Done():
			t.Fatal("timed out waiting for both turns to start")
		}
	}
	h.cancel(a)
	h.cancel(b)
	rB := h.await(doneB, "B's cancelled prompt")
	if rB.err != nil || rB.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("B = %+v, %v; want cancelled", rB.resp, rB.err)
	}
	select {
	case r := <-doneA:
		t.Fatalf("A answered while its model stream was held: %+v", r)
	default:
	}
	close(holdA)
	rA := h.await(doneA, "A's cancelled prompt")
	if rA.err != nil || rA.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("A = %+v, %v; want cancelled", rA.resp, rA.err)
	}
}

// TestSecondPromptSupersedes: a prompt on a busy session cancels the running
// turn (killing its command); the first answers "cancelled" and has ended —
// history appended, process gone — before the second turn's first model
// request.
func TestSecondPromptSupersedes(t *testing.T) {
	t.Parallel()
	var firstPID atomic.Int64
	type seen struct {
		aborted string
		pidGone bool
	}
	seenCh := make(chan seen, 1)
	h := newHarness(t, harnessOptions{provider: script{
		"first": steps(bash("f1", "echo $$; exec sleep 1000")),
		"second": func(_ context.Context, step int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
			switch step {
			case 0:
				res, _ := toolResult(req, "f1")
				seenCh <- seen{aborted: res, pidGone: testutil.Gone(int(firstPID.Load()))}
				return bash("s1", "echo $$; exec sleep 1000"), nil
			}
			return text("second done"), nil
		},
	}})
	sid, _ := h.newSession(sessions.ModeAuto)
	first := h.promptAsync(sid, "first")
	firstPID.Store(int64(h.livePID(sid, "f1")))

	second := h.promptAsync(sid, "second")
	r1 := h.await(first, "the superseded prompt")
	if r1.err != nil || r1.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("first = %+v, %v; want cancelled", r1.resp, r1.err)
	}
	// The second turn runs its own long command; session/cancel must reach
	// it although the SDK's own cancel for this session was dropped when
	// the superseded prompt returned.
	secondPID := h.livePID(sid, "s1")
	h.cancel(sid)
	r2 := h.await(second, "the second prompt")
	if r2.err != nil || r2.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("second = %+v, %v; want cancelled", r2.resp, r2.err)
	}
	if !testutil.Gone(secondPID) {
		t.Errorf("second command %d survived the cancel", secondPID)
	}
	s := <-seenCh
	if s.aborted != "Error: command aborted" {
		t.Errorf("second turn's request carries f1 = %q, want the first turn's aborted result", s.aborted)
	}
	if !s.pidGone {
		t.Errorf("the first turn's command %d was still alive when the second turn started", firstPID.Load())
	}
}

// TestCancelWithdrawsPermissionRequest: session/cancel while the user is
// being asked withdraws the request; the command never runs.
func TestCancelWithdrawsPermissionRequest(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	withdrawn := make(chan struct{})
	h := newHarness(t, harnessOptions{
		provider: script{"ask": steps(bash("c1", "touch "+marker))},
		onPermission: func(ctx context.Context, _ acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			<-ctx.Done() // only the agent's withdrawal ($/cancel_request) ends this
			close(withdrawn)
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
		},
	})
	sid, _ := h.newSession(sessions.ModeAsk)
	done := h.promptAsync(sid, "ask")
	h.client.waitUntil(t, h.ctx, "the permission request", func(_ []acpsdk.SessionNotification, p []acpsdk.RequestPermissionRequest) bool {
		return len(p) == 1
	})
	h.cancel(sid)
	r := h.await(done, "the cancelled prompt")
	if r.err != nil || r.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
	select {
	case <-withdrawn:
	case <-h.ctx.Done():
		t.Fatal("the pending permission request was never withdrawn")
	}
	if txt, st := h.finalText(sid, "c1"); st != acpsdk.ToolCallStatusFailed || !strings.Contains(txt, "command aborted") {
		t.Errorf("final update = %s %q", st, txt)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although its permission request was withdrawn")
	}
}

// TestClientCancelsPermission: a client that answers "cancelled" itself
// (as Zed does after session/cancel) ends the turn cancelled.
func TestClientCancelsPermission(t *testing.T) {
	t.Parallel()
	var h *harness
	var sid acpsdk.SessionId
	h = newHarness(t, harnessOptions{
		provider: script{"ask": steps(bash("c1", "echo never"), bash("c2", "echo never"))},
		onPermission: func(ctx context.Context, _ acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			// The editor sends session/cancel, then answers pending requests.
			if err := h.conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: sid}); err != nil {
				return acpsdk.RequestPermissionResponse{}, err
			}
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
		},
	})
	sid, _ = h.newSession(sessions.ModeAsk)
	resp, err := h.prompt(sid, "ask")
	if err != nil || resp.StopReason != acpsdk.StopReasonCancelled {
		t.Fatalf("prompt = %+v, %v; want cancelled", resp, err)
	}
	if n := len(h.client.permsOf(sid)); n != 1 {
		t.Errorf("%d permission requests, want 1 (no new question after the cancel)", n)
	}
}

// TestCloseSession: session/close cancels the turn, kills the session's
// background tasks (not other sessions'), and forgets the session.
func TestCloseSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := func(name string) string { return filepath.Join(dir, name) }
	h := newHarness(t, harnessOptions{provider: script{
		"start A": steps(bash("bg", "echo $$ > "+pidFile("a")+"; exec sleep 1000", "run_in_background", true)),
		"start B": steps(bash("bg", "echo $$ > "+pidFile("b")+"; exec sleep 1000", "run_in_background", true)),
		"long A":  steps(bash("fg", "echo $$; exec sleep 1000")),
	}})
	a, _ := h.newSession(sessions.ModeAuto)
	b, _ := h.newSession(sessions.ModeAuto)
	for sid, p := range map[acpsdk.SessionId]string{a: "start A", b: "start B"} {
		if resp, err := h.prompt(sid, p); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("%s = %+v, %v", p, resp, err)
		}
	}
	bgA := atoi(t, testutil.WaitFile(t, h.ctx, pidFile("a")))
	bgB := atoi(t, testutil.WaitFile(t, h.ctx, pidFile("b")))

	done := h.promptAsync(a, "long A")
	fg := h.livePID(a, "fg")
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: a}); err != nil {
		t.Fatal(err)
	}
	r := h.await(done, "the prompt of the closed session")
	if r.err != nil || r.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
	if !testutil.Gone(fg) {
		t.Errorf("foreground command %d outlived the close", fg)
	}
	testutil.WaitGone(t, h.ctx, bgA)
	if testutil.Gone(bgB) {
		t.Error("closing session A killed session B's background task")
	}
	_, err := h.prompt(a, "start A")
	re := requestError(t, err, -32002)
	if !strings.Contains(errorText(re), string(a)) {
		t.Errorf("error %q does not name the session", errorText(re))
	}
	_, err = h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: a})
	requestError(t, err, -32002)
	if _, err := h.reg.Get(string(b)); err != nil {
		t.Errorf("session B: %v", err)
	}
}

// TestDisconnectEndsEverything: when the editor goes away (stdin closed),
// every turn is cancelled and every session's processes are killed.
func TestDisconnectEndsEverything(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	h := newHarness(t, harnessOptions{provider: script{
		"start": steps(bash("bg", "echo $$ > "+pidFile+"; exec sleep 1000", "run_in_background", true)),
		"long":  steps(bash("fg", "echo $$; exec sleep 1000")),
	}})
	a, _ := h.newSession(sessions.ModeAuto)
	b, _ := h.newSession(sessions.ModeAuto)
	if _, err := h.prompt(a, "start"); err != nil {
		t.Fatal(err)
	}
	bg := atoi(t, testutil.WaitFile(t, h.ctx, pidFile))
	done := h.promptAsync(b, "long")
	fg := h.livePID(b, "fg")

	h.toAgent.Close()
	testutil.WaitGone(t, h.ctx, fg)
	testutil.WaitGone(t, h.ctx, bg)
	for h.reg.Len() != 0 {
		select {
		case <-h.ctx.Done():
			t.Fatalf("%d sessions left after the disconnect", h.reg.Len())
		case <-time.After(2 * time.Millisecond):
		}
	}
	h.await(done, "the cut-off prompt") // answered or failed: the connection is gone
}

// TestCancelRightAfterPrompt: a session/cancel written right behind its
// session/prompt (one write, so the wire order is certain) must cancel that
// prompt.
//
// The SDK runs each request on its own goroutine but notifications in order
// on another, so the cancel can be handled before the prompt's handler
// reached BeginTurn; the input filter records the wire order (wireOrder) so
// the cancel still applies.
func TestCancelRightAfterPrompt(t *testing.T) {
	t.Parallel()
	c := newHangingConn(t)
	for i := range 40 {
		sid := c.newSession(100 + i)
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, 200+i, sid) + "\n" + cancel)
		select {
		case b := <-c.lines:
			if !strings.Contains(string(b), `"stopReason":"cancelled"`) {
				t.Errorf("prompt answered %s, want cancelled", b)
			}
		case <-time.After(2 * time.Second):
			c.send(cancel)
			c.recv()
			t.Fatalf("run %d: session/cancel written right after session/prompt was lost", i)
		}
	}
}

// TestBackToBackPrompts: of two prompts written in one write, the later one
// supersedes the earlier, whichever handler the SDK happens to run first.
func TestBackToBackPrompts(t *testing.T) {
	t.Parallel()
	c := newHangingConn(t)
	for i := range 20 {
		sid := c.newSession(100 + i)
		first := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, 200+i, sid)
		second := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, 300+i, sid)
		c.send(first + "\n" + second)
		// The second prompt hangs in its model request until cancelled, so
		// the first answer must be the first prompt's, cancelled.
		got := c.nextReply()
		if string(got.ID) != fmt.Sprint(200+i) || !strings.Contains(string(got.Result), `"stopReason":"cancelled"`) {
			t.Fatalf("run %d: first answer id=%s result=%s, want id %d cancelled", i, got.ID, got.Result, 200+i)
		}
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid))
		got = c.nextReply()
		if string(got.ID) != fmt.Sprint(300+i) || !strings.Contains(string(got.Result), `"stopReason":"cancelled"`) {
			t.Fatalf("run %d: second answer id=%s result=%s", i, got.ID, got.Result)
		}
	}
}

// newHangingConn is an initialized raw connection whose model never answers
// until its turn is cancelled.
func newHangingConn(t *testing.T) *rawConn {
	c := newRawConn(t, harnessOptions{provider: agent.ProviderFunc(func(ctx context.Context, _ agent.Request, _ func(agent.Delta)) (agent.Response, error) {
		<-ctx.Done()
		return agent.Response{}, ctx.Err()
	})})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	c.recv()
	return c
}

// newSession creates a session in / with the given request id.
func (c *rawConn) newSession(id int) string {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, id))
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.recv().Result, &res); err != nil {
		c.t.Fatal(err)
	}
	// The commands follow the reply, before anything else of the session.
	if f := c.recv(); f.Method != "session/update" || !strings.Contains(string(f.Params), "available_commands_update") {
		c.t.Fatalf("after session/new: %+v, want available_commands_update", f)
	}
	return res.SessionID
}

// TestCancelInSameWriteAsInstantPrompt: even a turn that would finish at
// once is cancelled by a session/cancel that arrived in the same write as its
// prompt: the input filter records every frame already buffered before it
// passes the prompt on.
func TestCancelInSameWriteAsInstantPrompt(t *testing.T) {
	t.Parallel()
	c := newRawConn(t, harnessOptions{provider: agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: "done"}, FinishReason: agent.FinishStop}, nil
	})})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	c.recv()
	sid := c.newSession(2)
	for i := range 50 {
		prompt := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, 100+i, sid)
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
		c.send(prompt + "\n" + cancel)
		for {
			f := c.recv()
			if len(f.ID) == 0 {
				continue // an update of a turn that should not have run
			}
			if string(f.ID) != fmt.Sprint(100+i) || !strings.Contains(string(f.Result), `"stopReason":"cancelled"`) {
				t.Fatalf("run %d: answer id=%s result=%s, want cancelled", i, f.ID, f.Result)
			}
			break
		}
	}
}

// TestNullIDPromptDoesNotStallTheSession: a prompt sent with "id": null is a
// notification to the SDK, which never replies to it; the next prompt of the
// session must not wait for that reply.
func TestNullIDPromptDoesNotStallTheSession(t *testing.T) {
	t.Parallel()
	c := newRawConn(t, harnessOptions{provider: agent.ProviderFunc(func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: "done"}, FinishReason: agent.FinishStop}, nil
	})})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	c.recv()
	sid := c.newSession(2)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, sid))
	start := time.Now()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, sid))
	for {
		f := c.recv()
		if string(f.ID) == "3" {
			break
		}
	}
	// A stall would last the agent's reply grace, 5 s.
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("the prompt after a null-id prompt took %v", d)
	}
}
