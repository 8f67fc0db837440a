package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// errStalled is the cancel cause the watchdog gives a request's context.
var errStalled = errors.New("model endpoint went silent")

// stallError is a request the watchdog ended: the endpoint sent no byte for
// idle, either before its response (headers or first chunk) or between two
// reads of the stream.
type stallError struct {
	idle time.Duration
	// started reports that some of the response body had arrived.
	started bool
}

func (e *stallError) Error() string {
	if e.started {
		return fmt.Sprintf("no data for %v in the middle of the answer", e.idle)
	}
	return fmt.Sprintf("no answer for %v", e.idle)
}

// watchedDoer is the HTTP client of one attempt. It cancels the request when
// the endpoint stays silent longer than idle (0: never), and keeps the
// status and headers of the response for the retry policy.
type watchedDoer struct {
	client *http.Client
	idle   time.Duration
	// body, when set, is sent instead of the body go-openai encoded: its
	// types cannot say "reasoning_content": "" or "thinking" (see
	// encodeRequest), and its encoding would copy every image (newBody).
	body *requestBody

	// Written by Do before it returns; read after it returned.
	status int
	header http.Header
}

func (d *watchedDoer) Do(req *http.Request) (*http.Response, error) {
	if d.body != nil {
		body := d.body
		req.Body = io.NopCloser(body.reader())
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
		req.ContentLength = body.size
	}
	if d.idle <= 0 {
		resp, err := d.client.Do(req)
		if err == nil {
			d.status, d.header = resp.StatusCode, resp.Header
		}
		return resp, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{idle: d.idle}
	w.timer = time.AfterFunc(d.idle, func() {
		w.fired.Store(true)
		cancel(errStalled)
	})
	// Writing a large request counts as activity too: the clock is about
	// the endpoint's silence, not about our upload.
	trace := &httptrace.ClientTrace{
		WroteHeaders:         w.kick,
		WroteRequest:         func(httptrace.WroteRequestInfo) { w.kick() },
		GotFirstResponseByte: w.kick,
	}
	resp, err := d.client.Do(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		w.timer.Stop()
		cancel(nil)
		if w.fired.Load() {
			return nil, &stallError{idle: d.idle}
		}
		return nil, err
	}
	d.status, d.header = resp.StatusCode, resp.Header
	w.kick()
	resp.Body = &watchedBody{body: resp.Body, w: w, cancel: cancel}
	return resp, nil
}

// watchdog fires once when kick has not been called for idle.
type watchdog struct {
	idle  time.Duration
	timer *time.Timer
	fired atomic.Bool
	// read is set once a byte of the body arrived.
	read atomic.Bool
}

func (w *watchdog) kick() {
	if !w.fired.Load() {
		w.timer.Reset(w.idle)
	}
}

// maxLineBytes bounds one line of the response: an answer is bounded by
// MaxAnswerBytes, and go-openai reads a line whole into memory before we
// see any of it, so a line longer than that (plus its JSON framing) is
// refused as it arrives.
const maxLineBytes = MaxAnswerBytes + 1<<20

// watchedBody is a response body whose reads keep the watchdog quiet. Only
// bytes of a line that carries data count: SSE comments (": keep-alive")
// and blank lines are not progress, so an endpoint that sends only those
// fails like a silent one.
type watchedBody struct {
	body   io.ReadCloser
	w      *watchdog
	cancel context.CancelCauseFunc
	// line is the state of the current line: its length so far, and
	// whether it is a comment.
	lineLen int
	comment bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 && b.scan(p[:n]) {
		b.w.read.Store(true)
		b.w.kick()
	}
	if b.lineLen > maxLineBytes {
		b.release()
		return n, &tooLargeError{limit: MaxAnswerBytes}
	}
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, io.EOF) && b.w.fired.Load() {
		return n, &stallError{idle: b.w.idle, started: b.w.read.Load()}
	}
	// The body is over. go-openai reads an error body to its end without
	// closing it, so the watchdog is released here, not only in Close.
	b.release()
	return n, err
}

// scan follows the lines of p and reports whether any byte of it belongs
// to a line that carries data.
func (b *watchedBody) scan(p []byte) bool {
	progress := false
	for _, c := range p {
		switch {
		case c == '\n' || c == '\r':
			b.lineLen, b.comment = 0, false
		case b.lineLen == 0 && c == ':':
			b.lineLen, b.comment = 1, true
		default:
			b.lineLen++
			progress = progress || !b.comment
		}
	}
	return progress
}

func (b *watchedBody) release() {
	b.w.timer.Stop()
	b.cancel(nil)
}

func (b *watchedBody) Close() error {
	b.release()
	return b.body.Close()
}
