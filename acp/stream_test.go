package acp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// rawConn speaks newline-delimited JSON to a served Agent by hand, for
// frames no well-behaved client would send.
type rawConn struct {
	t     *testing.T
	w     io.Writer
	lines chan []byte
}

func newRawConn(t *testing.T, o harnessOptions) *rawConn {
	a, _ := newAgent(t, o)
	return newRawConnTo(t, a)
}

// newRawConnTo serves a; the reader stops at the test's end even if the
// test left lines unread.
func newRawConnTo(t *testing.T, a *acp.Agent) *rawConn {
	w, r := serve(t, a)
	lines := make(chan []byte, 64)
	stop := make(chan struct{})
	read := make(chan struct{})
	t.Cleanup(func() { close(stop); r.Close(); <-read })
	go func() {
		defer close(read)
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-stop:
				return
			}
		}
	}()
	return &rawConn{t: t, w: w, lines: lines}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *rawConn) recv() frame {
	c.t.Helper()
	return c.recvWithin(testutil.Timeout)
}

// recvWithin is recv with a bound of its own, for a frame whose handling is
// heavy by design (megabytes of hostile input under -race on a saturated
// machine): the test is about the answer, not its speed.
func (c *rawConn) recvWithin(d time.Duration) frame {
	c.t.Helper()
	select {
	case b, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the agent closed its output")
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			c.t.Fatalf("agent wrote a non-JSON line %q: %v", b, err)
		}
		return f
	case <-testutil.WithTimeout(c.t, d).Done():
		c.t.Fatal("timed out waiting for a reply")
		return frame{}
	}
}

func TestMalformedFrames(t *testing.T) {
	t.Parallel()
	c := newRawConn(t, harnessOptions{provider: agent.ProviderFunc(nil)})
	tests := []struct {
		name     string
		send     string
		wantID   string
		wantCode int // 0: a result
	}{
		{name: "not JSON", send: `{"jsonrpc":"2.0","id":1,"method":`, wantID: "null", wantCode: -32700},
		{name: "garbage", send: `hello`, wantID: "null", wantCode: -32700},
		{name: "still serving", send: `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`, wantID: "2"},
		{name: "batch", send: `[{"jsonrpc":"2.0","id":3,"method":"initialize"}]`, wantID: "null", wantCode: -32600},
		{name: "no method", send: `{"jsonrpc":"2.0","id":4}`, wantID: "4", wantCode: -32600},
		{name: "unknown method", send: `{"jsonrpc":"2.0","id":5,"method":"session/frobnicate","params":{}}`, wantID: "5", wantCode: -32601},
		{name: "bad params", send: `{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":5,"mcpServers":[]}}`, wantID: "6", wantCode: -32602},
		{name: "unknown session", send: `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}`, wantID: "7", wantCode: -32002},
		{name: "still serving at the end", send: `{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, wantID: "8"},
	}
	for _, tt := range tests {
		c.send(tt.send)
		f := c.recv()
		if string(f.ID) != tt.wantID {
			t.Errorf("%s: reply id = %s, want %s", tt.name, f.ID, tt.wantID)
		}
		switch {
		case tt.wantCode == 0 && f.Error != nil:
			t.Errorf("%s: error %+v, want a result", tt.name, *f.Error)
		case tt.wantCode != 0 && (f.Error == nil || f.Error.Code != tt.wantCode):
			t.Errorf("%s: reply %+v, want error %d", tt.name, f, tt.wantCode)
		}
	}
}
