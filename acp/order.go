package acp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Keys that carry a prompt's wire sequence number and request id from the
// input filter to the Prompt handler, inside the request's _meta (the SDK
// hands handlers nothing else of the frame).
const (
	seqKey = "dsh-acp/wireSeq"
	idKey  = "dsh-acp/wireId"
)

// replyGrace bounds how long a finished turn waits for the SDK to write its
// reply before letting the next turn of the session start anyway.
const replyGrace = 5 * time.Second

// replies tracks the replies owed for requests read and not yet written.
// A turn superseded by a newer prompt lets the newer one start only once its
// own reply is on the wire, so the editor never sees the new turn's updates
// before the old prompt's "cancelled"; and shutdown waits for all of them.
type replies struct {
	// mu guards waiting.
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func (r *replies) expect(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[string]chan struct{}{}
	}
	if _, dup := r.waiting[id]; !dup {
		r.waiting[id] = make(chan struct{})
	}
}

// waitAll waits until every awaited reply was written, or timeout.
func (r *replies) waitAll(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		r.mu.Lock()
		var ch chan struct{}
		for _, c := range r.waiting {
			ch = c
			break
		}
		r.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}

// done returns a channel closed once the reply to id was written; nil when
// id is not awaited.
func (r *replies) done(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting[id]
}

// written looks at an outgoing frame; a reply to an awaited prompt releases
// its waiters. Only replies and agent requests start with an id, so
// notifications — the bulk of the traffic — are not decoded.
func (r *replies) written(frame []byte) {
	if !bytes.HasPrefix(frame, []byte(`{"jsonrpc":"2.0","id":`)) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(frame, &msg) != nil || msg.Method != "" {
		return
	}
	key := compactID(msg.ID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.waiting[key]; ok {
		close(ch)
		delete(r.waiting, key)
	}
}

func compactID(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// wireOrder records, in the order frames are read, each session's prompts
// and cancels. The SDK handles every request on its own goroutine and
// notifications on another, so without this a session/cancel written right
// after its session/prompt could be handled first and lost, and of two
// back-to-back prompts the older could supersede the newer.
//
// It also notes every request whose reply is owed, so that shutdown can wait
// for the replies to requests already read (see Serve).
func (a *Agent) wireOrder(line []byte) []byte {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &head) == nil && head.Method != "" && len(head.ID) > 0 && string(head.ID) != "null" {
		a.replies.expect(compactID(head.ID))
	}
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
	case method != "session/prompt" || len(frame["id"]) == 0 || string(frame["id"]) == "null":
		// A prompt without an id (or with a null one) is a notification
		// to the SDK: no reply will ever be written to wait for.
		return line
	}
	seq := s.PromptArrived()
	id := compactID(frame["id"])
	meta := map[string]json.RawMessage{}
	if raw := params["_meta"]; len(raw) > 0 && json.Unmarshal(raw, &meta) != nil {
		meta = map[string]json.RawMessage{}
	}
	meta[seqKey] = json.RawMessage(strconv.FormatUint(seq, 10))
	meta[idKey], _ = json.Marshal(id)
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

// afterReply runs end once the reply to the prompt whose _meta carries its
// wire id has been written (or after replyGrace); at once for a prompt that
// did not come through the filter.
func (a *Agent) afterReply(meta map[string]any, end func()) {
	id, _ := meta[idKey].(string)
	done := a.replies.done(id)
	if done == nil {
		end()
		return
	}
	go func() {
		t := time.NewTimer(replyGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			a.log.Warn("prompt reply not written in time; starting the next turn anyway", zap.String("request", id))
		}
		end()
	}()
}

// promptSeq reads the sequence number wireOrder put in a prompt's _meta;
// 0 when absent (a caller that bypasses the filter).
func promptSeq(meta map[string]any) uint64 {
	if f, ok := meta[seqKey].(float64); ok && f > 0 {
		return uint64(f)
	}
	return 0
}
