package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/sessions"
)

// The SDK's scanner holds 10 MiB including the newline.
const sdkLimit = 10 << 20

// model is the fake model of the input tests: "hang" waits for the turn to
// be cancelled, "cmd" runs a command that prints its pid and sleeps, any
// other prompt is answered "done". It records the length of each prompt.
type model struct {
	// mu guards lens.
	mu   sync.Mutex
	lens []int
}

func (m *model) provider() agent.Provider {
	cmd := steps(bash("c1", "echo $$; exec sleep 1000"))
	return agent.ProviderFunc(func(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
		var last string
		for _, msg := range req.Messages {
			if msg.Role == agent.RoleUser {
				last = msg.Content
			}
		}
		m.mu.Lock()
		m.lens = append(m.lens, len(last))
		m.mu.Unlock()
		switch last {
		case "hang":
			<-ctx.Done()
			return agent.Response{}, ctx.Err()
		case "cmd":
			step := 0
			for _, msg := range req.Messages {
				if msg.Role == agent.RoleAssistant {
					step++
				}
			}
			return cmd(ctx, step, req, emit)
		}
		return text("done"), nil
	})
}

func (m *model) maxLen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.lens {
		n = max(n, l)
	}
	return n
}

func newInputConn(t *testing.T) (*rawConn, *model, *sessions.Registry) {
	m := &model{}
	// A window that holds the test's 6 MB prompts: a prompt that does not
	// fit is refused whole (it is never summarized), and these tests are
	// of what the input does to the agent.
	a, reg := newAgent(t, harnessOptions{provider: m.provider(), contextWindow: 8_000_000})
	c := newRawConnTo(t, a)
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}`)
	c.reply(`"init"`)
	return c, m, reg
}

// reply skips notifications and returns the reply with id; any other reply
// fails the test.
func (c *rawConn) reply(id string) frame {
	c.t.Helper()
	return c.replyWithin(id, testutil.Timeout)
}

// replyWithin is reply with each wait bounded by d.
func (c *rawConn) replyWithin(id string, d time.Duration) frame {
	c.t.Helper()
	for {
		f := c.recvWithin(d)
		if len(f.ID) == 0 {
			continue
		}
		if string(f.ID) != id {
			c.t.Fatalf("got a reply with id %s (%s %+v), want id %s", f.ID, f.Result, f.Error, id)
		}
		return f
	}
}

// nextReply is the next reply the agent wrote, whatever its id
// (notifications are skipped: a session's first prompt announces its
// commands).
func (c *rawConn) nextReply() frame {
	c.t.Helper()
	for {
		if f := c.recv(); len(f.ID) != 0 {
			return f
		}
	}
}

// waitLine waits for a line the agent wrote that matches re and returns the
// first submatch.
func (c *rawConn) waitLine(re *regexp.Regexp) string {
	c.t.Helper()
	for {
		select {
		case b, ok := <-c.lines:
			if !ok {
				c.t.Fatal("the agent closed its output")
			}
			if m := re.FindSubmatch(b); m != nil {
				return string(m[1])
			}
		case <-testutil.Context(c.t).Done():
			c.t.Fatalf("timed out waiting for a line matching %s", re)
		}
	}
}

func (c *rawConn) setAuto(sid string) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"mode-%s","method":"session/set_mode","params":{"sessionId":%q,"modeId":"auto"}}`, sid, sid))
	c.reply(fmt.Sprintf(`"mode-%s"`, sid))
}

// promptFrame is a prompt as a client writes it: '<', '>' and '&' as is.
func promptFrame(id, sid, text string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(text)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%s}]}}`, id, sid, b)
}

// promptWorks sends a prompt to sid and wants it answered end_turn.
func (c *rawConn) promptWorks(id, sid string) {
	c.t.Helper()
	c.send(promptFrame(id, sid, "hi"))
	f := c.reply(id)
	if f.Error != nil || !strings.Contains(string(f.Result), `"end_turn"`) {
		c.t.Fatalf("prompt %s in another session: %s %+v, want end_turn", id, f.Result, f.Error)
	}
}

// padded returns a session/new request with id, padded with spaces to
// exactly size bytes (cheap to decode, so the test measures the limit and
// not the decoder).
func padded(t *testing.T, id string, size int) string {
	t.Helper()
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":"/","mcpServers":[]}`, id)
	n := size - len(head) - 1
	if n < 0 {
		t.Fatal("size too small")
	}
	return head + strings.Repeat(" ", n) + "}"
}

// htmlPrompt is a prompt embedding an HTML file of about size bytes as a
// resource, as Zed sends an @-mentioned file: '<', '>' and '&' written
// as is.
func htmlPrompt(t *testing.T, id, sid string, size int) (frame string, htmlLen int) {
	t.Helper()
	row := `<tr><td class="a">x &amp; y</td><td><a href="/p?q=1&r=2">&lt;link&gt;</a></td></tr>` + "\n"
	html := "<!doctype html>\n<html><body><table>\n" + strings.Repeat(row, size/len(row)) + "</table></body></html>\n"
	params := map[string]any{
		"sessionId": sid,
		"prompt": []any{
			map[string]any{"type": "text", "text": "what is in this page?"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///tmp/page.html", "mimeType": "text/html", "text": html}},
		},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "session/prompt", "params": params}); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n"), len(html)
}

// TestNoInputEndsTheAgent: each input that used to make the agent exit (or
// misbehave) is answered or dropped, and a prompt in another session still
// works after it.
func TestNoInputEndsTheAgent(t *testing.T) {
	t.Parallel()
	c, m, reg := newInputConn(t)
	other := c.newSession(2)
	victim := c.newSession(3)
	n := 0
	next := func() string { n++; return strconv.Itoa(1000 + n) }

	t.Run("a frame of exactly the SDK's limit", func(t *testing.T) {
		c.send(padded(t, `"huge"`, sdkLimit))
		f := c.reply(`"huge"`)
		if f.Error == nil || f.Error.Code != -32600 || !strings.Contains(f.Error.Message, "10485760 bytes") {
			t.Errorf("reply %+v, want -32600 naming the size", f.Error)
		}
		c.promptWorks(next(), other)
	})

	t.Run("a frame one byte shorter is served", func(t *testing.T) {
		before := reg.Len()
		c.send(padded(t, `"fits"`, sdkLimit-1))
		if f := c.reply(`"fits"`); f.Error != nil {
			t.Errorf("a frame within the limit was refused: %+v", f.Error)
		}
		if reg.Len() != before+1 {
			t.Errorf("%d sessions, want %d", reg.Len(), before+1)
		}
		c.promptWorks(next(), other)
	})

	t.Run("a frame far over the limit, its id first", func(t *testing.T) {
		c.send(padded(t, `77`, 3*sdkLimit))
		if f := c.reply(`77`); f.Error == nil || f.Error.Code != -32600 {
			t.Errorf("reply %+v, want -32600", f.Error)
		}
		c.promptWorks(next(), other)
	})

	t.Run("a 6 MB HTML resource in a prompt", func(t *testing.T) {
		frame, htmlLen := htmlPrompt(t, `"html"`, victim, 6<<20)
		if len(frame) < 6<<20 || strings.Count(frame, "<") < 100000 {
			t.Fatalf("test frame: %d bytes", len(frame))
		}
		c.send(frame)
		// Decoding, storing and estimating a 6 MB prompt under -race takes
		// tens of seconds on a saturated 2-core machine.
		f := c.replyWithin(`"html"`, 3*testutil.Timeout)
		if f.Error != nil || !strings.Contains(string(f.Result), `"end_turn"`) {
			t.Fatalf("HTML prompt: %s %+v", f.Result, f.Error)
		}
		if got := m.maxLen(); got < htmlLen {
			t.Errorf("the model saw %d bytes of prompt, want the whole %d-byte page", got, htmlLen)
		}
		c.promptWorks(next(), other)
	})

	t.Run("2 MiB of < in a prompt", func(t *testing.T) {
		frame := promptFrame(`"lt"`, victim, strings.Repeat("<", 2<<20))
		if len(frame) > 3<<20 {
			t.Fatalf("test frame of %d bytes: escaped", len(frame))
		}
		c.send(frame)
		if f := c.reply(`"lt"`); f.Error != nil {
			t.Fatalf("prompt of '<': %+v", f.Error)
		}
		c.promptWorks(next(), other)
	})

	t.Run("1,500 extension notifications in one write", func(t *testing.T) {
		c.send(strings.Repeat(`{"jsonrpc":"2.0","method":"_x/ping","params":{}}`+"\n", 1500) + `{"jsonrpc":"2.0","method":"_x/ping"}`)
		c.promptWorks(next(), other)
	})

	t.Run("1,500 unknown notifications and cancels of unknown sessions", func(t *testing.T) {
		var b strings.Builder
		for i := range 1500 {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"gone-%d"}}`+"\n", i)
			b.WriteString(`{"jsonrpc":"2.0","method":"x/unknown","params":{}}` + "\n")
		}
		c.send(strings.TrimSuffix(b.String(), "\n"))
		c.promptWorks(next(), other)
	})

	t.Run("3,000 cancels of a live session in one write", func(t *testing.T) {
		c.send(strings.TrimSuffix(strings.Repeat(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session\/cancel","params":{"sessionId":%q}}`, victim)+"\n", 3000), "\n"))
		c.promptWorks(next(), other)
		c.promptWorks(next(), victim)
	})

	t.Run("ids that are not a string, a number or null", func(t *testing.T) {
		before := reg.Len()
		for _, id := range []string{`[7]`, `{}`, `true`, `false`, `{"a":1}`} {
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, id))
			f := c.reply("null")
			if f.Error == nil || f.Error.Code != -32600 {
				t.Errorf("id %s: reply %+v, want -32600", id, f.Error)
			}
		}
		c.promptWorks(next(), other)
		if reg.Len() != before {
			t.Errorf("requests with invalid ids ran: %d sessions, want %d", reg.Len(), before)
		}
	})

	t.Run("a frame that is not valid UTF-8", func(t *testing.T) {
		before := reg.Len()
		c.send("{\"jsonrpc\":\"2.0\",\"id\":\"bad\xff\xfe\",\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}")
		select {
		case b := <-c.lines:
			if !utf8.Valid(b) || !json.Valid(b) {
				t.Fatalf("the agent wrote a line that is not JSON text: %q", b)
			}
			var f frame
			_ = json.Unmarshal(b, &f)
			if string(f.ID) != "null" || f.Error == nil || f.Error.Code != -32700 {
				t.Errorf("reply %s, want a parse error with id null", b)
			}
		case <-testutil.Context(t).Done():
			t.Fatal("no reply")
		}
		c.promptWorks(next(), other)
		if reg.Len() != before {
			t.Errorf("the invalid frame ran: %d sessions, want %d", reg.Len(), before)
		}
	})

	t.Run("a request method sent as a notification", func(t *testing.T) {
		before := reg.Len()
		c.send(`{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
		c.promptWorks(next(), other)
		if reg.Len() != before {
			t.Errorf("a notification created a session: %d sessions, want %d", reg.Len(), before)
		}
	})
}

// TestPromptIDWithHTMLCharacters: the SDK writes the reply's id with <, >
// and & escaped; the next prompt of the session must not wait for a reply
// spelled like the request.
func TestPromptIDWithHTMLCharacters(t *testing.T) {
	t.Parallel()
	c, _, _ := newInputConn(t)
	sid := c.newSession(2)
	for i, id := range []string{`"<a&b>"`, `"x\u003cy"`, `"\/&"`} {
		start := time.Now()
		c.send(promptFrame(id, sid, "hi"))
		c.reply(strings.NewReplacer(`<`, `\u003c`, `>`, `\u003e`, `&`, `\u0026`).Replace(id))
		next := strconv.Itoa(10 + i)
		c.promptWorks(next, sid)
		// A stall would last the agent's reply grace, 5 s.
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("prompt %s then the next one took %v", id, d)
		}
	}
}

// methodForms are the spellings a JSON encoder may give a method name.
var methodForms = map[string]func(string) string{
	"plain":          func(m string) string { return m },
	"escaped slash":  func(m string) string { return strings.ReplaceAll(m, "/", `\/`) },
	"unicode escape": func(m string) string { return strings.ReplaceAll(m, "/", `\u002f`) },
}

// TestEscapedMethodNames: session\/prompt and session\u002fcancel are
// session/prompt and session/cancel, for the wire order as for the SDK.
func TestEscapedMethodNames(t *testing.T) {
	t.Parallel()
	pidLine := regexp.MustCompile("```console\\\\n(\\d+)")
	for pname, pform := range methodForms {
		for cname, cform := range methodForms {
			t.Run("prompt "+pname+", cancel "+cname, func(t *testing.T) {
				t.Parallel()
				c, _, _ := newInputConn(t)
				sid := c.newSession(2)
				c.setAuto(sid)
				prompt := func(id, text string) string {
					return strings.Replace(promptFrame(id, sid, text), `"session/prompt"`, `"`+pform("session/prompt")+`"`, 1)
				}
				cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"%s","params":{"sessionId":%q}}`, cform("session/cancel"), sid)

				// While the model hangs.
				c.send(prompt("3", "hang"))
				c.send(cancel)
				if f := c.reply("3"); !strings.Contains(string(f.Result), `"cancelled"`) {
					t.Fatalf("hanging prompt: %s %+v, want cancelled", f.Result, f.Error)
				}

				// Mid-command.
				c.send(prompt("4", "cmd"))
				pid := atoi(t, c.waitLine(pidLine))
				c.send(cancel)
				if f := c.reply("4"); !strings.Contains(string(f.Result), `"cancelled"`) {
					t.Fatalf("prompt running a command: %s %+v, want cancelled", f.Result, f.Error)
				}
				testutil.WaitGone(t, testutil.Context(t), pid)

				// Right behind its prompt, in one write: the wire order holds.
				c.send(prompt("5", "hang") + "\n" + cancel)
				if f := c.reply("5"); !strings.Contains(string(f.Result), `"cancelled"`) {
					t.Fatalf("prompt and cancel in one write: %s %+v, want cancelled", f.Result, f.Error)
				}
				// Back to back: the later prompt supersedes the earlier.
				c.send(prompt("6", "hang") + "\n" + prompt("7", "hi"))
				if f := c.reply("6"); !strings.Contains(string(f.Result), `"cancelled"`) {
					t.Fatalf("superseded prompt: %s %+v, want cancelled", f.Result, f.Error)
				}
				if f := c.reply("7"); !strings.Contains(string(f.Result), `"end_turn"`) {
					t.Fatalf("superseding prompt: %s %+v, want end_turn", f.Result, f.Error)
				}
			})
		}
	}
}

// TestFramesSplitAndJoined: frames cut anywhere across writes (even inside
// a UTF-8 sequence), and several frames in one write, are read as frames.
func TestFramesSplitAndJoined(t *testing.T) {
	t.Parallel()
	c, m, _ := newInputConn(t)
	sid := c.newSession(2)
	other := c.newSession(3)

	whole := promptFrame("4", sid, "héllo wörld") + "\n"
	cut := strings.Index(whole, "é") + 1 // inside the two bytes of é
	for _, piece := range []string{whole[:5], whole[5:cut], whole[cut : cut+3], whole[cut+3:]} {
		if _, err := c.w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if f := c.reply("4"); f.Error != nil {
		t.Fatalf("split prompt: %+v", f.Error)
	}
	if got, want := m.maxLen(), len("héllo wörld"); got != want {
		t.Errorf("the model saw a %d-byte prompt, want %d", got, want)
	}

	joined := promptFrame("5", sid, "hi") + "\n" + promptFrame("6", other, "hi") + "\r\n\n" +
		`{"jsonrpc":"2.0","id":7,"method":"session/set_mode","params":{"sessionId":"` + other + `","modeId":"auto"}}` + "\n"
	if _, err := c.w.Write([]byte(joined)); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 3 {
		f := c.recv()
		if len(f.ID) == 0 {
			continue
		}
		if f.Error != nil {
			t.Errorf("reply %s: %+v", f.ID, f.Error)
		}
		got[string(f.ID)] = true
	}
	for _, id := range []string{"5", "6", "7"} {
		if !got[id] {
			t.Errorf("no reply to %s", id)
		}
	}
}
