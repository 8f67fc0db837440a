package wire_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/acp/wire"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSessions knows the sessions it is given and records the cancels.
type fakeSessions struct {
	known map[string]bool

	// mu guards cancels.
	mu      sync.Mutex
	cancels []string
}

func (f *fakeSessions) Known(sid string) bool { return f.known[sid] }

func (f *fakeSessions) CancelThrough(sid string, n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, sid+":"+strconv.FormatUint(n, 10))
}

func (f *fakeSessions) cancelled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancels...)
}

func prompt(id int, sid string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[]}}`
}

// connected is a Wire between a client's pipe and a reader standing in for
// the SDK.
type connected struct {
	w      *wire.Wire
	client io.WriteCloser
	sdk    *bufio.Reader
	sdkOut io.Writer
	out    *syncBuffer
}

func connect(t *testing.T, s wire.Sessions, replied func(json.RawMessage)) *connected {
	t.Helper()
	in, client := io.Pipe()
	out := &syncBuffer{}
	w := wire.New(s, nil)
	sdkIn, sdkOut, start := w.Connect(in, out, replied)
	start()
	c := &connected{w: w, client: client, sdk: bufio.NewReader(sdkIn), sdkOut: sdkOut, out: out}
	t.Cleanup(func() {
		client.Close()
		// The filter closes the SDK's input once the client's ended.
		_, _ = io.Copy(io.Discard, c.sdk)
		w.Close()
	})
	return c
}

func (c *connected) send(t *testing.T, lines ...string) {
	t.Helper()
	if _, err := io.WriteString(c.client, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next reads the next frame the SDK is handed and returns its id.
func (c *connected) next(t *testing.T) string {
	t.Helper()
	line, err := c.sdk.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading what the SDK is handed: %v", err)
	}
	var f struct{ ID json.RawMessage }
	if err := json.Unmarshal(line, &f); err != nil {
		t.Fatalf("frame %q: %v", line, err)
	}
	return string(f.ID)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// TestCancelCoversThePromptsReadBeforeIt: prompts of one session reach the
// SDK one at a time, each once the previous one's handler claimed its
// ticket, numbered in the order written; a cancel written between them is
// told to the sessions with the number of prompts it covers as soon as it
// is read, before any handler runs.
func TestCancelCoversThePromptsReadBeforeIt(t *testing.T) {
	s := &fakeSessions{known: map[string]bool{"s1": true}}
	c := connect(t, s, nil)
	c.send(t, prompt(1, "s1"), prompt(2, "s1"),
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
		prompt(3, "s1"),
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"unknown"}}`)
	// Prompt 1 and the cancel go in the batch read; prompts 2 and 3 wait
	// until the prompt before them is claimed.
	if id := c.next(t); id != "1" {
		t.Fatalf("first frame handed to the SDK has id %s, want 1", id)
	}
	if id := c.next(t); id != "" {
		t.Fatalf("second frame handed to the SDK has id %s, want the cancel", id)
	}
	c.w.NotificationHandled()
	if got := s.cancelled(); len(got) != 1 || got[0] != "s1:2" {
		t.Fatalf("cancels told to the sessions = %v, want [s1:2] (the two prompts read before it)", got)
	}
	for want := uint64(1); want <= 3; want++ {
		if tk := c.w.Claim("s1"); tk.Seq != want {
			t.Fatalf("claimed ticket %d, want %d", tk.Seq, want)
		}
		if want < 3 {
			if id := c.next(t); id != strconv.FormatUint(want+1, 10) {
				t.Fatalf("frame handed to the SDK after claiming %d has id %s, want %d", want, id, want+1)
			}
		}
	}
	if tk := c.w.Claim("s1"); tk.Seq != 0 {
		t.Errorf("claim with no prompt in transit = %d, want the zero ticket", tk.Seq)
	}
}

// TestAfterReplyWaitsForTheReply: a turn's end runs once the reply to its
// prompt is written, the reply's result is handed to the watcher given to
// Connect (and nothing the agent writes that is not a reply), and
// WaitReplies returns once every request read was answered.
func TestAfterReplyWaitsForTheReply(t *testing.T) {
	s := &fakeSessions{known: map[string]bool{"s1": true}}
	var mu sync.Mutex
	var results []string
	c := connect(t, s, func(result json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, string(result))
	})
	c.send(t, prompt(1, "s1"))
	c.next(t)
	tk := c.w.Claim("s1")
	ended := make(chan struct{})
	c.w.AfterReply(tk, func() { close(ended) })
	for _, f := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1"}}`,
	} {
		if _, err := io.WriteString(c.sdkOut, f+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ended:
		t.Fatal("the turn ended before its reply was written")
	default:
	}
	if _, err := io.WriteString(c.sdkOut, `{"jsonrpc":"2.0","result":{"stopReason":"end_turn"},"id":1}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(testutil.Timeout):
		t.Fatal("the turn did not end after its reply was written")
	}
	mu.Lock()
	got := append([]string(nil), results...)
	mu.Unlock()
	if len(got) != 1 || got[0] != `{"stopReason":"end_turn"}` {
		t.Errorf("results handed to the watcher = %q, want the reply's only", got)
	}
	if !c.w.WaitReplies() {
		t.Error("WaitReplies: replies still owed after the only request was answered")
	}
}
