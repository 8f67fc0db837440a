package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/dsh-acp/dsh-acp/agent"
)

// endedEarlyError is a stream that stopped before a finish_reason: the
// connection closed (cause may be nil when it closed cleanly) or broke.
type endedEarlyError struct{ cause error }

func (e *endedEarlyError) Error() string {
	if e.cause == nil {
		return "stream closed before finish_reason"
	}
	return "stream broke: " + e.cause.Error()
}

func (e *endedEarlyError) Unwrap() error { return e.cause }

// retryable reports whether err is worth another attempt. Attempt-level
// errors only: whether output was already delivered is decided by the caller.
func retryable(err error) bool {
	var (
		apiErr    *openaisdk.Error
		urlErr    *url.Error
		earlyErr  *endedEarlyError
		streamErr *ssestream.StreamError
	)
	switch {
	case errors.As(err, &apiErr):
		s := apiErr.StatusCode
		return s == http.StatusRequestTimeout || s == http.StatusConflict ||
			s == http.StatusTooManyRequests || s >= 500
	case errors.As(err, &streamErr):
		return false
	case errors.As(err, &urlErr), errors.As(err, &earlyErr):
		return true
	default:
		return false
	}
}

// retryDelay is how long to wait before retry n. A Retry-After (or OpenAI's
// Retry-After-Ms) from the server wins over our backoff; ok is false when the
// server asks for more than maxRetryAfter.
func (p *Provider) retryDelay(err error, n int) (d time.Duration, ok bool) {
	var apiErr *openaisdk.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		if d, found := parseRetryAfter(apiErr.Response.Header, time.Now()); found {
			return d, d <= maxRetryAfter
		}
	}
	return p.backoff(n), true
}

func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		if s > maxRetryAfter.Seconds() {
			return maxRetryAfter + time.Second, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// describe turns the last attempt's error into one a user can act on. The
// result wraps agent.ErrProvider and the original error (for errors.As), and
// its text never contains the API key.
func (p *Provider) describe(err error, retries int) error {
	var (
		apiErr    *openaisdk.Error
		urlErr    *url.Error
		earlyErr  *endedEarlyError
		streamErr *ssestream.StreamError
		msg       string
	)
	after := ""
	if retries > 0 {
		after = fmt.Sprintf(" after %d %s", retries, plural(retries, "retry", "retries"))
	}
	switch {
	case errors.As(err, &apiErr):
		msg = p.describeStatus(apiErr, retries, after)
	case errors.As(err, &earlyErr):
		msg = fmt.Sprintf("the model stream from %s ended early (%s)%s; the answer is incomplete, try again",
			p.endpoint, earlyErr.Error(), after)
	case errors.As(err, &streamErr):
		msg = fmt.Sprintf("the model endpoint %s reported an error mid-answer: %s", p.endpoint, streamErrorText(streamErr))
	case errors.As(err, &urlErr):
		msg = fmt.Sprintf("cannot reach the model endpoint %s%s: %v; check --base-url (DSH_BASE_URL) and the network",
			p.endpoint, after, urlErr.Err)
	default:
		msg = fmt.Sprintf("the model endpoint %s sent a response we could not read: %v", p.endpoint, err)
	}
	return &providerError{msg: p.redact(msg), cause: err}
}

func (p *Provider) describeStatus(apiErr *openaisdk.Error, retries int, after string) string {
	status := fmt.Sprintf("%d %s", apiErr.StatusCode, http.StatusText(apiErr.StatusCode))
	server := serverMessage(apiErr)
	switch apiErr.StatusCode {
	case http.StatusUnauthorized:
		// The server's message is left out on purpose: some servers echo the
		// (masked or whole) key back.
		if p.apiKey == "" {
			return fmt.Sprintf("no API key: the model endpoint %s requires one (401); set DSH_API_KEY or DEEPSEEK_API_KEY", p.endpoint)
		}
		return fmt.Sprintf("the model endpoint %s rejected the API key (401); check DSH_API_KEY or DEEPSEEK_API_KEY", p.endpoint)
	case http.StatusPaymentRequired:
		return fmt.Sprintf("the model endpoint %s refused the request (402, usually an empty balance)%s", p.endpoint, server)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("rate limited by %s%s%s; wait a moment and try again", p.endpoint, after, server)
	case http.StatusNotFound:
		return fmt.Sprintf("the model endpoint %s returned %s%s; check --base-url (most servers want it to end in /v1) and --model (%q)",
			p.endpoint, status, server, p.model)
	}
	return fmt.Sprintf("the model endpoint %s returned %s%s%s", p.endpoint, status, after, server)
}

// streamErrorText is the message of an SSE error event
// ({"error":{"message":…}}), or the raw event when it has another shape.
func streamErrorText(e *ssestream.StreamError) string {
	var ev struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(e.Event.Data, &ev) == nil && ev.Error.Message != "" {
		return ev.Error.Message
	}
	return strings.TrimSpace(string(e.Event.Data))
}

// serverMessage is the server's own error text, shortened, as ": text".
func serverMessage(apiErr *openaisdk.Error) string {
	m := strings.TrimSpace(apiErr.Message)
	if m == "" {
		return ""
	}
	const limit = 300
	if len(m) > limit {
		m = m[:limit] + "…"
	}
	return ": " + m
}

// redact removes the API key from text that may have come from a server.
func (p *Provider) redact(s string) string {
	if p.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, p.apiKey, "[API key]")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// providerError carries a user-facing message and wraps both
// agent.ErrProvider and the underlying cause.
type providerError struct {
	msg   string
	cause error
}

func (e *providerError) Error() string   { return e.msg }
func (e *providerError) Unwrap() []error { return []error{agent.ErrProvider, e.cause} }
