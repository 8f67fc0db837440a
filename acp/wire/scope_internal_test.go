package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestScopedElicitation: the scope the agent put in _meta is where ACP
// has it (flattened sessionId, toolCallId), other _meta keys stay, and
// every other frame passes byte for byte.
func TestScopedElicitation(t *testing.T) {
	req := acpsdk.UnstableCreateElicitationRequest{Form: &acpsdk.UnstableCreateElicitationForm{
		Meta: map[string]any{ScopeKey: Scope{SessionID: "s1", ToolCallID: "call_1"}, "other": 1}, Message: "Which?",
	}}
	params, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": json.RawMessage(params)})
	got := scoped(append(frame, '\n'))
	if got[len(got)-1] != '\n' {
		t.Fatalf("no newline at the end: %q", got)
	}
	var msg struct {
		ID     int            `json:"id"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(got, &msg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"sessionId": "s1", "toolCallId": "call_1", "message": "Which?", "mode": "form",
		"requestedSchema": map[string]any{"properties": map[string]any{}}, "_meta": map[string]any{"other": float64(1)},
	}
	if msg.ID != 3 || !reflect.DeepEqual(msg.Params, want) {
		t.Errorf("scoped = %s", got)
	}

	for _, f := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"text":"\"method\":\"elicitation/create\""}}}` + "\n",
		`{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"sessionId":"s2","mode":"form","message":"m","requestedSchema":{}}}` + "\n",
		`not json "method":"elicitation/create"` + "\n",
	} {
		if got := scoped([]byte(f)); string(got) != f {
			t.Errorf("scoped(%s) = %s, want it unchanged", f, got)
		}
	}
}
