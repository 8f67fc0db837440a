package wire

import (
	"bytes"
	"encoding/json"
)

// ScopeKey is the _meta key under which the agent gives an
// elicitation/create request its scope (sessionId, toolCallId): the SDK's
// request types (acp-go-sdk v0.13.5) have no field for ACP's flattened
// scope, so the wire moves it out of _meta to where the spec puts it, as
// the frame is written.
const ScopeKey = "dsh-acp/elicitationScope"

// Scope is the value under ScopeKey.
type Scope struct {
	SessionID  string `json:"sessionId"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ScopeMeta is the _meta of an elicitation/create request scoped so.
func ScopeMeta(s Scope) map[string]any {
	return map[string]any{ScopeKey: s}
}

var elicitationCreate = []byte(`"method":"elicitation/create"`)

// scoped returns frame with the scope of an elicitation/create request in
// its place; any other frame as it is.
func scoped(frame []byte) []byte {
	if !bytes.Contains(frame, elicitationCreate) {
		return frame
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(frame, &msg) != nil {
		return frame
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return frame
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil || meta[ScopeKey] == nil {
		return frame
	}
	var s Scope
	if json.Unmarshal(meta[ScopeKey], &s) != nil {
		return frame
	}
	delete(meta, ScopeKey)
	if len(meta) == 0 {
		delete(params, "_meta")
	} else {
		params["_meta"], _ = json.Marshal(meta)
	}
	params["sessionId"], _ = json.Marshal(s.SessionID)
	if s.ToolCallID != "" {
		params["toolCallId"], _ = json.Marshal(s.ToolCallID)
	}
	var err error
	if msg["params"], err = json.Marshal(params); err != nil {
		return frame
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return frame
	}
	return append(out, '\n')
}
