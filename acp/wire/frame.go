package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
)

// header is what the input filter decodes of every frame, once. Its types
// accept exactly what the SDK's own envelope accepts, so a frame the filter
// passes is one the SDK will decode; params is read only for its sessionId.
type header struct {
	envelope
	Params struct {
		SessionID json.RawMessage `json:"sessionId"`
	} `json:"params"`
}

type envelope struct {
	JSONRPC *string              `json:"jsonrpc"`
	ID      json.RawMessage      `json:"id"`
	Method  *string              `json:"method"`
	Result  json.RawMessage      `json:"result"`
	Error   *acpsdk.RequestError `json:"error"`
}

// unmarshalHeader decodes line into h. Params that are not an object are
// not the filter's business (the SDK answers them with Invalid params), but
// the decoder reports only the first type error of a frame: then the frame
// is decoded again without looking into params, for the errors after it.
func unmarshalHeader(line []byte, h *header) error {
	err := json.Unmarshal(line, h)
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) || typ.Field != "params" {
		return err
	}
	var e struct {
		envelope
		Params json.RawMessage `json:"params"`
	}
	err = json.Unmarshal(line, &e)
	h.envelope = e.envelope
	return err
}

// withEmptyParams gives a request sent without params (JSON-RPC lets a
// client leave them out) an empty object: for a method whose params are all
// optional, that is what the client meant, and the SDK decodes params as
// they come (nothing is not an object, and it answers Invalid params).
func withEmptyParams(line []byte) []byte {
	var e struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &e) != nil || (len(e.Params) != 0 && string(e.Params) != "null") {
		return line
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	m["params"] = json.RawMessage("{}")
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return out
}

// isNotification: no id, or a null one, which the SDK treats alike (it
// never answers either).
func (h *header) isNotification() bool {
	return len(h.ID) == 0 || string(h.ID) == "null"
}

// sessionID returns params.sessionId when it is a string.
func (h *header) sessionID() (string, bool) {
	var s string
	if len(h.Params.SessionID) == 0 || json.Unmarshal(h.Params.SessionID, &s) != nil {
		return "", false
	}
	return s, true
}

// rejection is the error reply owed to a frame not passed on.
type rejection struct {
	id   json.RawMessage // nil: null
	code int
	msg  string
}

// decodeHeader decodes line into a header, or says why it is no usable
// JSON-RPC message.
func decodeHeader(line []byte) (header, *rejection) {
	var h header
	if !utf8.Valid(line) {
		return h, &rejection{code: -32700, msg: "Parse error: not valid UTF-8"}
	}
	typ, r := decodeError(unmarshalHeader(line, &h))
	if r != nil {
		return h, r
	}
	if len(h.ID) > 0 && !validID(h.ID) {
		return h, &rejection{code: -32600, msg: "Invalid Request: id must be a string, a number or null"}
	}
	return h, h.invalid(typ)
}

// decodeError sorts what decoding a frame's header returned: a rejection
// when the frame is no JSON object; else the type error of a member
// (nil if none), which makes an invalid request answered with its id.
func decodeError(err error) (*json.UnmarshalTypeError, *rejection) {
	if err == nil {
		return nil, nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn) || !errors.As(err, &typ):
		return nil, &rejection{code: -32700, msg: "Parse error: not valid JSON"}
	case typ.Field == "":
		return nil, &rejection{code: -32600, msg: "Invalid Request: expected a JSON-RPC object (batches are not supported)"}
	}
	return typ, nil
}

// invalid says why an object with a valid id is no JSON-RPC message (typ:
// the member of the wrong type, if any); nil when it is one.
func (h *header) invalid(typ *json.UnmarshalTypeError) *rejection {
	var msg string
	switch {
	case typ != nil:
		msg = fmt.Sprintf("Invalid Request: %s has the wrong type", typ.Field)
	case h.JSONRPC != nil && *h.JSONRPC != "2.0":
		msg = `Invalid Request: jsonrpc must be "2.0"`
	case h.Method != nil && *h.Method == "":
		msg = "Invalid Request: empty method"
	case h.Method == nil && (h.isNotification() || (h.Result == nil && h.Error == nil)):
		msg = "Invalid Request: no method"
	default:
		return nil
	}
	return &rejection{id: h.replyID(), code: -32600, msg: msg}
}

// replyID is the id an error reply to the frame carries: a request's own.
// Of anything else (a notification, a response) it is nil, which replies
// with null: a client would match an error carrying its own request's id
// to that request.
func (h *header) replyID() json.RawMessage {
	if string(h.ID) != "null" && h.Result == nil && h.Error == nil {
		return h.ID
	}
	return nil
}

func errorFrame(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	e.Error.Code = code
	e.Error.Message = msg
	b, _ := json.Marshal(e)
	return append(b, '\n')
}

// readID looks for the top-level id of a frame of which only the beginning
// is at hand; nil if none is found before the end, or it is not a valid id.
func readID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		// Member names match as the SDK's decoder matches them.
		if strings.EqualFold(key, "id") {
			id = v
		}
	}
	if !validID(id) || string(id) == "null" || !utf8.Valid(id) {
		return nil
	}
	return id
}

// validID reports whether raw is an id JSON-RPC allows in a request: a
// string, a number or null. Anything else (an array, an object, a boolean)
// is an invalid request.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"', c == 'n', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// idKey is a valid request id as the reply to it will carry it: the SDK
// echoes the id's bytes, but re-encoded (a string may come back with "<"
// written as \u003c, "/" unescaped), so strings are keyed by their value
// and numbers by their text.
func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(raw)
}
