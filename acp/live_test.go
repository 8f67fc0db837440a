package acp_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// seqOut is what `seq from to` prints.
func seqOut(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// terminalData is the data of a live update of call id in Zed's terminal
// mode.
func terminalData(u acpsdk.SessionUpdate, id string) (string, bool) {
	tu := u.ToolCallUpdate
	if tu == nil || string(tu.ToolCallId) != id {
		return "", false
	}
	o, ok := tu.Meta["terminal_output"].(map[string]any)
	if !ok {
		return "", false
	}
	d, _ := o["data"].(string)
	return d, true
}

// liveText is the console block of a live (status-less) update of call id
// without a terminal.
func liveText(u acpsdk.SessionUpdate, id string) (string, bool) {
	tu := u.ToolCallUpdate
	if tu == nil || string(tu.ToolCallId) != id || tu.Status != nil {
		return "", false
	}
	_, after, ok := strings.Cut(contentText(tu.Content), "```console\n")
	if !ok {
		return "", false
	}
	body, _, _ := strings.Cut(after, "```")
	return body, true
}

// tick asks for one live update.
func tick(t *testing.T, ctx context.Context, ticks chan time.Time) {
	t.Helper()
	select {
	case ticks <- time.Now():
	case <-ctx.Done():
		t.Fatal("timed out handing the update clock a tick")
	}
}

var skippedRE = regexp.MustCompile(`^\[… (\d+) bytes not shown; full output: (\S+)\]\n`)

// TestLiveOutputSaysWhatItSkipped: a burst of more than the editor is sent
// between two updates (`seq 1 20000`, 108,894 bytes) is not passed off as
// contiguous: the update says, on a line of its own, how many bytes it does
// not show and which file holds them, then goes on at a line start. The
// file lives until the session closes; the model's text knows nothing of it.
func TestLiveOutputSaysWhatItSkipped(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{true, false} {
		t.Run(map[bool]string{true: "terminal", false: "fenced"}[terminal], func(t *testing.T) {
			t.Parallel()
			g1, g2 := fifo(t), fifo(t)
			ticks := make(chan time.Time)
			lt := newLiveTap()
			var modelText string
			h := newHarness(t, harnessOptions{terminal: terminal, ticks: ticks, tap: lt.tap, provider: script{
				"p": func(_ context.Context, step int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
					if step == 0 {
						return bash("c1", "echo head; cat "+g1+" >/dev/null; seq 1 20000; echo MARK; cat "+g2+" >/dev/null; echo tail"), nil
					}
					modelText, _ = toolResult(req, "c1")
					return text("done"), nil
				},
			}})
			sid, _ := h.newSession(sessions.ModeAuto)
			done := h.promptAsync(sid, "p")
			shown := terminalData
			if !terminal {
				shown = liveText
			}
			// waitShown waits for the next live update and returns what it shows.
			seen := 0
			waitShown := func(what string) string {
				t.Helper()
				var got string
				h.client.waitUntil(t, h.ctx, what, func(ups []acpsdk.SessionNotification, _ []acpsdk.RequestPermissionRequest) bool {
					n := 0
					for _, up := range ups {
						if d, ok := shown(up.Update, "c1"); ok {
							if n++; n > seen {
								got = d
								return true
							}
						}
					}
					return false
				})
				seen++
				return got
			}

			lt.waitSuffix(t, h.ctx, "stdout", "head\n")
			tick(t, h.ctx, ticks)
			if got := waitShown("the first update"); got != "head\n" {
				t.Fatalf("first update shows %q, want head", got)
			}

			release(t, h.ctx, g1)
			lt.waitSuffix(t, h.ctx, "stdout", "MARK\n")
			tick(t, h.ctx, ticks)
			got := waitShown("the update after the burst")
			m := skippedRE.FindStringSubmatch(got)
			if m == nil {
				t.Fatalf("update after the burst does not start with the skipped line:\n%.300s", got)
			}
			rest := got[len(m[0]):]
			first, _, _ := strings.Cut(rest, "\n")
			k, err := strconv.Atoi(first)
			if err != nil {
				t.Fatalf("the output does not resume at a line start: %.100q", rest)
			}
			if want := seqOut(k, 20000) + "MARK\n"; rest != want {
				t.Errorf("after the skipped line: %.100q…, want lines %d to 20000 and MARK, whole", rest, k)
			}
			if len(rest) > 32<<10 {
				t.Errorf("update shows %d bytes of the stream, more than its bound", len(rest))
			}
			// Every byte is either shown or counted: in terminal mode the
			// head was shown before; the fenced block shows the tail so far.
			burst := len(seqOut(1, 20000)) + len("MARK\n")
			if !terminal {
				burst += len("head\n")
			}
			if n, _ := strconv.Atoi(m[1]); n+len(rest) != burst {
				t.Errorf("%d bytes not shown + %d shown != %d printed", n, len(rest), burst)
			}
			spill := m[2]
			full, err := os.ReadFile(spill)
			if err != nil || !strings.HasPrefix(string(full), "head\n"+seqOut(1, 20000)+"MARK\n") {
				t.Errorf("the named file does not hold the whole output (%d bytes, %v)", len(full), err)
			}

			release(t, h.ctx, g2)
			if r := h.await(done, "the prompt"); r.err != nil || r.resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %+v, %v", r.resp, r.err)
			}
			if terminal {
				if got := waitShown("the last output"); got != "tail\n" {
					t.Errorf("last terminal update shows %q, want only the new line", got)
				}
			}
			final := h.client.waitUpdate(t, h.ctx, sid, "the final update", isFinal("c1")).ToolCallUpdate
			raw, _ := asJSON(t, final)["rawOutput"].(map[string]any)
			if paths, _ := raw["spillPaths"].([]any); len(paths) != 1 || paths[0] != spill {
				t.Errorf("rawOutput.spillPaths = %v, want the file the live output named, %s", raw["spillPaths"], spill)
			}
			if strings.Contains(modelText, "not shown") || !strings.Contains(modelText, "[output truncated; full output: "+spill+"]") {
				t.Errorf("model's text:\n%.300s…", modelText)
			}

			// The file outlives the turn, and goes with its session.
			if _, err := os.Stat(spill); err != nil {
				t.Errorf("spill file gone after the turn: %v", err)
			}
			if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(spill); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("spill file after its session closed: %v", err)
			}
		})
	}
}

// TestAbortKeepsShownOutput: a cancelled command's final update still shows
// the output the editor showed, then the abort; the model reads only the
// abort.
func TestAbortKeepsShownOutput(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{true, false} {
		t.Run(map[bool]string{true: "terminal", false: "fenced"}[terminal], func(t *testing.T) {
			t.Parallel()
			ticks := make(chan time.Time)
			lt := newLiveTap()
			var modelText string
			h := newHarness(t, harnessOptions{terminal: terminal, ticks: ticks, tap: lt.tap, provider: script{
				"p": steps(bash("c1", "echo shown; exec sleep 1000")),
				"after": func(_ context.Context, _ int, req agent.Request, _ func(agent.Delta)) (agent.Response, error) {
					modelText, _ = toolResult(req, "c1")
					return text("ok"), nil
				},
			}})
			sid, _ := h.newSession(sessions.ModeAuto)
			done := h.promptAsync(sid, "p")
			lt.waitSuffix(t, h.ctx, "stdout", "shown\n")
			tick(t, h.ctx, ticks)
			h.client.waitUpdate(t, h.ctx, sid, "the live update", func(u acpsdk.SessionUpdate) bool {
				d, ok := terminalData(u, "c1")
				if !terminal {
					d, ok = liveText(u, "c1")
				}
				return ok && d == "shown\n"
			})
			h.cancel(sid)
			if r := h.await(done, "the cancelled prompt"); r.err != nil || r.resp.StopReason != acpsdk.StopReasonCancelled {
				t.Fatalf("prompt = %+v, %v", r.resp, r.err)
			}
			final := h.client.waitUpdate(t, h.ctx, sid, "the final update", isFinal("c1")).ToolCallUpdate
			var blocks []string
			hasTerminal := false
			for _, c := range final.Content {
				switch {
				case c.Terminal != nil:
					hasTerminal = true
				case c.Content != nil && c.Content.Content.Text != nil:
					blocks = append(blocks, c.Content.Content.Text.Text)
				}
			}
			want := []string{"test command c1", "```console\nshown\n```", "```console\nError: command aborted\n```"}
			if terminal {
				// The terminal keeps what it showed.
				want = []string{"test command c1", "```console\nError: command aborted\n```"}
			}
			if fmt.Sprint(blocks) != fmt.Sprint(want) || hasTerminal != terminal {
				t.Errorf("final content %q (terminal %v), want %q", blocks, hasTerminal, want)
			}
			if *final.Status != acpsdk.ToolCallStatusFailed {
				t.Errorf("status %v, want failed", *final.Status)
			}
			if _, err := h.prompt(sid, "after"); err != nil {
				t.Fatal(err)
			}
			if modelText != "Error: command aborted" {
				t.Errorf("model's text = %q", modelText)
			}
		})
	}
}

// TestLiveOutputInterleavedInReadOrder: stdout and stderr reach the editor
// in the order they were read, each read whole: a rune whose bytes came in
// two stdout reads is not cut by the stderr read between them. Each print
// waits until the agent has the one before, so the read order is known.
func TestLiveOutputInterleavedInReadOrder(t *testing.T) {
	t.Parallel()
	g := []string{fifo(t), fifo(t), fifo(t), fifo(t)}
	lt := newLiveTap()
	cmd := `printf 'out1 '; cat ` + g[0] + ` >/dev/null; printf 'err1\n' >&2; cat ` + g[1] + ` >/dev/null; ` +
		`printf 'x\342\202'; cat ` + g[2] + ` >/dev/null; printf 'err2\n' >&2; cat ` + g[3] + ` >/dev/null; printf '\254 out2\n'`
	// No tick: everything goes in the one update sent when the command ends.
	h := newHarness(t, harnessOptions{terminal: true, ticks: make(chan time.Time), tap: lt.tap, provider: script{"p": steps(bash("c1", cmd))}})
	sid, _ := h.newSession(sessions.ModeAuto)
	done := h.promptAsync(sid, "p")
	lt.waitSuffix(t, h.ctx, "stdout", "out1 ")
	release(t, h.ctx, g[0])
	lt.waitSuffix(t, h.ctx, "stderr", "err1\n")
	release(t, h.ctx, g[1])
	lt.waitSuffix(t, h.ctx, "stdout", "x\342\202")
	release(t, h.ctx, g[2])
	lt.waitSuffix(t, h.ctx, "stderr", "err2\n")
	release(t, h.ctx, g[3])
	if r := h.await(done, "the prompt"); r.err != nil {
		t.Fatal(r.err)
	}
	var updates []string
	for _, u := range h.client.updatesOf(sid) {
		if d, ok := terminalData(u, "c1"); ok {
			updates = append(updates, d)
		}
	}
	if want := []string{"out1 err1\nxerr2\n€ out2\n"}; fmt.Sprint(updates) != fmt.Sprint(want) {
		t.Errorf("terminal updates %q, want %q", updates, want)
	}
}
