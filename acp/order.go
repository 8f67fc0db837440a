package acp

import (
	"bytes"
	"encoding/json"
	"strconv"

	"go.uber.org/zap"
)

// seqKey carries a prompt's wire sequence number from the input filter to
// the Prompt handler, inside the request's _meta (the SDK hands handlers
// nothing else of the frame).
const seqKey = "dsh-acp/wireSeq"

// wireOrder records, in the order frames are read, each session's prompts
// and cancels. The SDK handles every request on its own goroutine and
// notifications on another, so without this a session/cancel written right
// after its session/prompt could be handled first and lost, and of two
// back-to-back prompts the older could supersede the newer.
func (a *Agent) wireOrder(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"session/prompt"`)) && !bytes.Contains(line, []byte(`"session/cancel"`)) {
		return line
	}
	var frame map[string]json.RawMessage
	if json.Unmarshal(line, &frame) != nil {
		return line
	}
	var method string
	if json.Unmarshal(frame["method"], &method) != nil {
		return line
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(frame["params"], &params) != nil {
		return line
	}
	var sid string
	if json.Unmarshal(params["sessionId"], &sid) != nil {
		return line
	}
	s, err := a.opts.Sessions.Get(sid)
	if err != nil {
		return line // the handler answers "not found"
	}
	switch {
	case method == "session/cancel":
		s.CancelArrived()
		return line
	case method != "session/prompt" || len(frame["id"]) == 0:
		return line
	}
	seq := s.PromptArrived()
	meta := map[string]json.RawMessage{}
	if raw := params["_meta"]; len(raw) > 0 && json.Unmarshal(raw, &meta) != nil {
		meta = map[string]json.RawMessage{}
	}
	meta[seqKey] = json.RawMessage(strconv.FormatUint(seq, 10))
	var err1, err2 error
	params["_meta"], err1 = json.Marshal(meta)
	frame["params"], err2 = json.Marshal(params)
	out, err3 := json.Marshal(frame)
	if err1 != nil || err2 != nil || err3 != nil {
		a.log.Warn("could not tag prompt with its wire order", zap.String("session", sid))
		return line
	}
	return out
}

// promptSeq reads the sequence number wireOrder put in a prompt's _meta;
// 0 when absent (a caller that bypasses the filter).
func promptSeq(meta map[string]any) uint64 {
	if f, ok := meta[seqKey].(float64); ok && f > 0 {
		return uint64(f)
	}
	return 0
}
