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

	// Written by Do before it returns; read after it returned.
	status int
	header http.Header
}

func (d *watchedDoer) Do(req *http.Request) (*http.Response, error) {
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

// watchedBody is a response body whose reads keep the watchdog quiet.
type watchedBody struct {
	body   io.ReadCloser
	w      *watchdog
	cancel context.CancelCauseFunc
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.w.read.Store(true)
		b.w.kick()
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

func (b *watchedBody) release() {
	b.w.timer.Stop()
	b.cancel(nil)
}

func (b *watchedBody) Close() error {
	b.release()
	return b.body.Close()
}
