package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent"
)

// Record is one line a Recorder writes.
type Record struct {
	Tag     string        `json:"tag"`
	Request agent.Request `json:"request"`
}

// recorder is the Provider NewRecorder returns.
type recorder struct {
	inner agent.Provider

	// mu serialises writes to w so lines from concurrent sessions never
	// interleave.
	mu sync.Mutex
	w  io.Writer
}

// NewRecorder returns a Provider that appends every request to w as one JSON
// line, {"tag": Tag(req), "request": req}, then passes it to p. The line is
// written before p is called, so a request that makes p hang or fail is on
// record too. If the write fails the request fails and p is not called: a
// recording with holes would mislead whoever reads it. Safe for concurrent
// use; w sees whole lines, one Write each.
func NewRecorder(p agent.Provider, w io.Writer) agent.Provider {
	return &recorder{inner: p, w: w}
}

func (r *recorder) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	line, err := json.Marshal(Record{Tag: Tag(req), Request: req})
	if err != nil {
		return agent.Response{}, fmt.Errorf("record model request: %w", err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	_, err = r.w.Write(line)
	r.mu.Unlock()
	if err != nil {
		return agent.Response{}, fmt.Errorf("record model request: %w", err)
	}
	return r.inner.Stream(ctx, req, emit)
}
