package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestDecodeHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line string
		wantCode   int // 0: passed on
		wantID     string
		wantMethod string
		wantSID    string
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, wantMethod: "initialize"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, wantMethod: "session/cancel"},
		{name: "escaped slash", line: `{"jsonrpc":"2.0","method":"session\/cancel","params":{"sessionId":"s1"}}`, wantMethod: "session/cancel", wantSID: "s1"},
		{name: "unicode escape", line: `{"params":{"prompt":[],"sessionId":"s\u0031"},"method":"session\u002fprompt","id":"p","jsonrpc":"2.0"}`, wantMethod: "session/prompt", wantSID: "s1"},
		{name: "params not an object", line: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":[1]}`, wantMethod: "session/new"},
		{name: "sessionId not a string", line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":5}}`, wantMethod: "session/prompt"},
		{name: "response", line: `{"jsonrpc":"2.0","id":3,"result":{}}`},
		{name: "error response", line: `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}`},
		{name: "parse error", line: `{"id":1,`, wantCode: -32700, wantID: "null"},
		{name: "two values", line: `{"id":1,"method":"a"}{"id":2,"method":"b"}`, wantCode: -32700, wantID: "null"},
		{name: "invalid UTF-8 in the id", line: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"initialize\"}", wantCode: -32700, wantID: "null"},
		{name: "batch", line: `[]`, wantCode: -32600, wantID: "null"},
		{name: "scalar", line: `42`, wantCode: -32600, wantID: "null"},
		{name: "empty method", line: `{"jsonrpc":"2.0","id":"a","method":""}`, wantCode: -32600, wantID: `"a"`},
		{name: "method not a string", line: `{"jsonrpc":"2.0","id":"a","method":5}`, wantCode: -32600, wantID: `"a"`},
		{name: "wrong jsonrpc", line: `{"jsonrpc":"1.0","id":4,"method":"initialize"}`, wantCode: -32600, wantID: "4"},
		{name: "neither", line: `{"jsonrpc":"2.0","id":7}`, wantCode: -32600, wantID: "7"},
		{name: "array id", line: `{"jsonrpc":"2.0","id":[7],"method":"initialize"}`, wantCode: -32600, wantID: "null"},
		{name: "object id", line: `{"jsonrpc":"2.0","id":{},"method":"initialize"}`, wantCode: -32600, wantID: "null"},
		{name: "boolean id", line: `{"jsonrpc":"2.0","id":true,"method":"initialize"}`, wantCode: -32600, wantID: "null"},
		{name: "bad params, then a bad method", line: `{"jsonrpc":"2.0","id":1,"params":[1],"method":5}`, wantCode: -32600, wantID: "1"},
		{name: "malformed error member", line: `{"jsonrpc":"2.0","id":3,"error":{"code":"x"}}`, wantCode: -32600, wantID: "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, r := decodeHeader([]byte(tt.line))
			if tt.wantCode == 0 {
				if r != nil {
					t.Fatalf("rejected a valid frame: %+v", r)
				}
				if got := deref(h.Method); got != tt.wantMethod {
					t.Errorf("method = %q, want %q", got, tt.wantMethod)
				}
				if sid, _ := h.sessionID(); sid != tt.wantSID {
					t.Errorf("sessionId = %q, want %q", sid, tt.wantSID)
				}
				return
			}
			if r == nil {
				t.Fatal("passed on a frame that should be rejected")
			}
			reply := errorFrame(r.id, r.code, r.msg)
			var f struct {
				ID    json.RawMessage    `json:"id"`
				Error struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(reply, &f); err != nil {
				t.Fatalf("reply %q: %v", reply, err)
			}
			if f.Error.Code != tt.wantCode || string(f.ID) != tt.wantID {
				t.Errorf("reply %s, want code %d id %s", reply, tt.wantCode, tt.wantID)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestReadLineOverLong: a line over the limit is consumed whole and comes
// back cut, with its true size; the next line is intact.
func TestReadLineOverLong(t *testing.T) {
	t.Parallel()
	long := `{"id":"big","x":"` + strings.Repeat("x", keepFrame) + `"}`
	br := bufio.NewReaderSize(strings.NewReader(long+"\r\n"+`{"next":true}`+"\n"), 64<<10)
	first, size, err := readLine(br)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != keepFrame || size <= len(first) {
		t.Errorf("over-long line: kept %d bytes of %d, want %d kept and the size beyond", len(first), size, keepFrame)
	}
	if id := readID(first); string(id) != `"big"` {
		t.Errorf("id read from the cut line = %s, want \"big\"", id)
	}
	second, size, err := readLine(br)
	if err != nil || !bytes.Equal(second, []byte(`{"next":true}`)) || size != len(second) {
		t.Errorf("next line = %q (size %d), %v", second, size, err)
	}
}

func TestReadID(t *testing.T) {
	t.Parallel()
	tests := []struct{ prefix, want string }{
		{`{"jsonrpc":"2.0","id":12,"method":"x","params":{"a":"bbbb`, `12`},
		{`{"method":"x","ID":"k","params":[1,2`, `"k"`},
		{`{"method":"x","params":{"a":"bbbb`, ``}, // the id, if any, is past the cut
		{`{"id":[1],"params":"`, ``},
		{`{"id":null,"params":"`, ``},
		{`[{"id":1}`, ``},
	}
	for _, tt := range tests {
		if got := string(readID([]byte(tt.prefix))); got != tt.want {
			t.Errorf("readID(%s) = %s, want %s", tt.prefix, got, tt.want)
		}
	}
}

// TestReplyDetectedWhateverItsFieldOrder: the output side recognises a reply
// by decoding it, not by the SDK's field order or its escaping of the id.
func TestReplyDetectedWhateverItsFieldOrder(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, reqID, reply string }{
		{name: "SDK order", reqID: `5`, reply: `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{name: "result first", reqID: `5`, reply: `{"result":{"stopReason":"end_turn"},"id":5,"jsonrpc":"2.0"}`},
		{name: "error, id last", reqID: `"a"`, reply: `{"jsonrpc":"2.0","error":{"code":-1,"message":"x"},"id":"a"}`},
		{name: "spaces", reqID: `"a"`, reply: "{ \"id\" : \"a\" ,\n \"result\" : null }"},
		{name: "HTML-escaped id", reqID: `"<p&q>"`, reply: `{"jsonrpc":"2.0","id":"\u003cp\u0026q\u003e","result":{}}`},
		{name: "escaped slash", reqID: `"a\/b"`, reply: `{"id":"a/b","result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrder(zap.NewNop())
			id := idKey(json.RawMessage(tt.reqID))
			o.expect(id)
			done := o.done(id)
			o.written([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"id":5}}` + "\n"))
			o.written([]byte(`{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{}}` + "\n"))
			select {
			case <-done:
				t.Fatal("a notification or an agent request released the waiter")
			default:
			}
			o.written([]byte(tt.reply + "\n"))
			select {
			case <-done:
			default:
				t.Fatalf("reply %s to request id %s not recognised", tt.reply, tt.reqID)
			}
		})
	}
}
