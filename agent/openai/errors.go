package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

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

// eventError is an error event in the middle of a stream
// (data: {"error":{"message":…}}).
type eventError struct{ message string }

func (e *eventError) Error() string { return "error event: " + e.message }

// statusError is an HTTP error status, with what the server said about it.
type statusError struct {
	status int
	header http.Header
	// message, code and typ are the server's error object, when it sent
	// one; message falls back to the raw body otherwise.
	message, code, typ string
	cause              error
}

func (e *statusError) Error() string {
	return fmt.Sprintf("status %d: %s", e.status, e.message)
}

func (e *statusError) Unwrap() error { return e.cause }

// requestError turns what go-openai returned for a request that did not
// get to streaming into our own types, adding the response headers it
// does not keep.
func (d *watchedDoer) requestError(err error) error {
	var (
		stallErr *stallError
		apiErr   *goopenai.APIError
		reqErr   *goopenai.RequestError
	)
	switch {
	case errors.As(err, &stallErr):
		return stallErr
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
		code := ""
		if apiErr.Code != nil {
			code = fmt.Sprint(apiErr.Code)
		}
		return &statusError{status: apiErr.HTTPStatusCode, header: d.header, message: apiErr.Message, code: code, typ: apiErr.Type, cause: err}
	case errors.As(err, &reqErr):
		// A body that is not an OpenAI error object: vLLM's flat
		// {"object":"error","message":…}, an HTML page from a proxy, a
		// plain-text message from a local server.
		e := &statusError{status: reqErr.HTTPStatusCode, header: d.header, message: string(reqErr.Body), cause: err}
		var flat struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(reqErr.Body, &flat) == nil && flat.Message != "" {
			e.message, e.typ = flat.Message, flat.Type
		}
		return e
	case d.status >= http.StatusBadRequest:
		// The error body could not be read.
		return &statusError{status: d.status, header: d.header, cause: err}
	}
	return err
}

// contextExceeded reports whether the server refused the request because
// it does not fit the model's context window. The wordings, all on a 400:
//   - OpenAI: code "context_length_exceeded", message "This model's maximum
//     context length is N tokens. However, your messages resulted in M
//     tokens…" or "Your input exceeds the context window of this model…";
//   - DeepSeek: code "invalid_request_error", message "This model's maximum
//     context length is 131072 tokens. However, you requested 131134 tokens
//     (…). Please reduce the length of the messages or completion.";
//   - vLLM: OpenAI's first sentence, code 400;
//   - llama.cpp: type "exceed_context_size_error", "the request exceeds the
//     available context size…".
func (e *statusError) contextExceeded() bool {
	if e.status != http.StatusBadRequest && e.status != http.StatusRequestEntityTooLarge {
		return false
	}
	if e.code == "context_length_exceeded" || e.typ == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(e.message)
	for _, s := range []string{"maximum context length", "context_length_exceeded", "exceeds the context window", "exceeds the available context size"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// retryable reports whether err is worth another attempt. Attempt-level
// errors only: whether output was already delivered is decided by the caller.
// A stall is not retried: the endpoint already had the whole timeout.
func retryable(err error) bool {
	var (
		statusErr *statusError
		urlErr    *url.Error
		earlyErr  *endedEarlyError
	)
	switch {
	case errors.As(err, &statusErr):
		s := statusErr.status
		return s == http.StatusRequestTimeout || s == http.StatusConflict ||
			s == http.StatusTooManyRequests || s >= 500
	case errors.As(err, &urlErr):
		// A host that does not resolve will not resolve on the next try
		// either: said at once, not after the retries' backoff.
		var dnsErr *net.DNSError
		return !errors.As(err, &dnsErr) || !dnsErr.IsNotFound
	case errors.As(err, &earlyErr):
		return true
	default:
		return false
	}
}

// retryDelay is how long to wait before retry n. A Retry-After (or OpenAI's
// Retry-After-Ms) from the server wins over our backoff; ok is false when the
// server asks for more than maxRetryAfter.
func (p *Provider) retryDelay(err error, n int) (d time.Duration, ok bool) {
	var statusErr *statusError
	if errors.As(err, &statusErr) && statusErr.header != nil {
		if d, found := parseRetryAfter(statusErr.header, time.Now()); found {
			return d, d <= maxRetryAfter
		}
	}
	return p.backoff(n), true
}

func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
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
// result wraps agent.ErrProvider (and agent.ErrContextExceeded when that is
// what the server said) and the original error (for errors.As), and its text
// never contains the API key.
func (p *Provider) describe(err error, retries int) error {
	var (
		statusErr *statusError
		urlErr    *url.Error
		earlyErr  *endedEarlyError
		eventErr  *eventError
		stallErr  *stallError
		decodeErr *decodeError
		largeErr  *tooLargeError
		msg       string
		kinds     = []error{agent.ErrProvider}
	)
	after := ""
	if retries > 0 {
		after = fmt.Sprintf(" after %d %s", retries, plural(retries, "retry", "retries"))
	}
	switch {
	case errors.As(err, &statusErr):
		msg = p.describeStatus(statusErr, after)
		if statusErr.contextExceeded() {
			kinds = append(kinds, agent.ErrContextExceeded)
		}
		if statusErr.status == http.StatusUnauthorized {
			kinds = append(kinds, agent.ErrAuthRequired)
		}
	case errors.As(err, &stallErr):
		what := fmt.Sprintf("sent no answer for %v", stallErr.idle)
		if stallErr.started {
			what = fmt.Sprintf("sent nothing for %v in the middle of its answer", stallErr.idle)
		}
		msg = fmt.Sprintf("the model endpoint %s %s; it may be overloaded or hung: try again, or raise --model-timeout",
			p.endpoint, what)
	case errors.As(err, &earlyErr):
		msg = fmt.Sprintf("the model stream from %s ended early (%s)%s; the answer is incomplete, try again",
			p.endpoint, earlyErr.Error(), after)
	case errors.As(err, &eventErr):
		msg = fmt.Sprintf("the model endpoint %s reported an error mid-answer: %s", p.endpoint, eventErr.message)
	case errors.As(err, &urlErr):
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			msg = fmt.Sprintf("cannot reach the model endpoint %s: its host %q does not resolve; check --base-url (DSH_BASE_URL) and the network",
				p.endpoint, dnsErr.Name)
			break
		}
		msg = fmt.Sprintf("cannot reach the model endpoint %s%s: %v; check --base-url (DSH_BASE_URL) and the network",
			p.endpoint, after, urlErr.Err)
	case errors.As(err, &largeErr):
		msg = fmt.Sprintf("the model endpoint %s sent an answer larger than %d MiB (text, reasoning and tool arguments together); it was stopped there and dropped: try again, or ask for less at once",
			p.endpoint, largeErr.limit>>20)
	case errors.As(err, &decodeErr):
		msg = fmt.Sprintf("the model endpoint %s sent a response we could not read: %v", p.endpoint, decodeErr.cause)
	default:
		msg = fmt.Sprintf("the request to the model endpoint %s failed: %v", p.endpoint, err)
	}
	return &providerError{msg: p.redact(msg), kinds: kinds, cause: err}
}

func (p *Provider) describeStatus(e *statusError, after string) string {
	status := fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
	server := serverMessage(e.message)
	switch e.status {
	case http.StatusUnauthorized:
		// The server's message is left out on purpose: some servers echo the
		// (masked or whole) key back.
		if k, why := p.currentKey(); k == "" {
			note := ""
			if why != nil {
				note = " (" + why.Error() + ")"
			}
			return fmt.Sprintf("no API key: the model endpoint %s requires one (401); sign in to it (dsh-acp login --base-url %s, or your editor's sign-in), or set DSH_API_KEY or DEEPSEEK_API_KEY%s", p.endpoint, p.endpoint, note)
		}
		return fmt.Sprintf("the model endpoint %s rejected the API key (401); sign in to it again (dsh-acp login --base-url %s, or your editor's sign-in), or check DSH_API_KEY or DEEPSEEK_API_KEY", p.endpoint, p.endpoint)
	case http.StatusPaymentRequired:
		return fmt.Sprintf("the model endpoint %s refused the request (402, usually an empty balance)%s", p.endpoint, server)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("rate limited by %s%s%s; wait a moment and try again", p.endpoint, after, server)
	case http.StatusNotFound:
		return fmt.Sprintf("the model endpoint %s returned %s%s; check --base-url (most servers want it to end in /v1) and --model (%q)",
			p.endpoint, status, server, p.model)
	}
	if e.contextExceeded() {
		return fmt.Sprintf("the conversation no longer fits the model's context window (%s returned %s%s)", p.endpoint, status, server)
	}
	return fmt.Sprintf("the model endpoint %s returned %s%s%s", p.endpoint, status, after, server)
}

// serverMessage is the server's own error text, shortened, as ": text".
func serverMessage(m string) string {
	m = strings.TrimSpace(m)
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
	return HideKey(s, p.key())
}

// MinKeyLen is the shortest key HideKey hides. Real keys are long
// (DeepSeek's 35 characters, OpenAI's and OpenRouter's longer; vLLM's docs
// use "token-abc123"); a shorter one is a placeholder a local server
// ignores ("ollama", "EMPTY", "x"), and hiding it would garble text that
// merely contains it.
const MinKeyLen = 8

// wholeKeyLen: see HideKey.
const wholeKeyLen = 20

// HideKey replaces key in s with "[API key]" where it stands as a whole
// token — not inside a longer word — and only when it is long enough to
// be a key (MinKeyLen): "ollama-coder" stays itself when the key is
// "ollama", "monkeys" when it is "monkey". A key of wholeKeyLen or more
// characters is hidden wherever it occurs: no word contains one by
// chance, and one glued to other text is still the key.
func HideKey(s, key string) string {
	if len(key) < MinKeyLen || !strings.Contains(s, key) {
		return s
	}
	if len(key) >= wholeKeyLen {
		return strings.ReplaceAll(s, key, "[API key]")
	}
	var b strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(key)
		whole := (i == 0 || !keyChar(s[i-1])) && (end == len(s) || !keyChar(s[end]))
		b.WriteString(s[:i])
		if whole {
			b.WriteString("[API key]")
		} else {
			b.WriteString(key)
		}
		s = s[end:]
	}
}

// keyChar: a byte that can be part of a key token (letters, digits, "-"
// and "_", as in sk-or-v1-…); a key next to one is part of a longer word.
func keyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// providerError carries a user-facing message and wraps its kinds
// (agent.ErrProvider, maybe agent.ErrContextExceeded) and the underlying
// cause.
type providerError struct {
	msg   string
	kinds []error
	cause error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() []error {
	if e.cause == nil {
		return e.kinds
	}
	return append(e.kinds[:len(e.kinds):len(e.kinds)], e.cause)
}

// redactErr is err with the API key taken out of its text, still wrapping
// err and agent.ErrProvider.
// A refused key (401) also wraps agent.ErrAuthRequired.
func (p *Provider) redactErr(err error) error {
	kinds := []error{agent.ErrProvider}
	var statusErr *statusError
	if errors.As(err, &statusErr) && statusErr.status == http.StatusUnauthorized {
		kinds = append(kinds, agent.ErrAuthRequired)
	}
	return &providerError{msg: p.redact(err.Error()), kinds: kinds, cause: err}
}

// ErrModelNotServed marks a request the endpoint refused because it does
// not serve the model (errors wrapping it also wrap agent.ErrProvider).
var ErrModelNotServed = errors.New("the endpoint does not serve the model")

// modelNotServed reports whether the endpoint refused the request because
// of the model: DeepSeek answers 400 "Model Not Exist"; OpenAI-style
// endpoints 404 with code "model_not_found"; Ollama 404 `model "x" not
// found, try pulling it first`.
func (e *statusError) modelNotServed() bool {
	m := strings.ToLower(e.message)
	switch {
	case e.code == "model_not_found":
		return true
	case e.status == http.StatusBadRequest:
		return strings.Contains(m, "model not exist")
	case e.status == http.StatusNotFound:
		return strings.Contains(m, "model") && (strings.Contains(m, "not found") || strings.Contains(m, "not exist"))
	}
	return false
}

// modelMissing is the error for a request refused because of its model,
// naming the model, the endpoint and what the endpoint serves (GET
// /models); nil when err is something else.
func (p *Provider) modelMissing(ctx context.Context, model string, err error) error {
	var se *statusError
	if !errors.As(err, &se) || !se.modelNotServed() {
		return nil
	}
	msg := fmt.Sprintf("model %q is not served by %s", model, p.endpoint)
	if ids, lerr := p.Models(ctx); lerr == nil && len(ids) > 0 {
		msg += fmt.Sprintf(" (it serves: %s)", strings.Join(ids, ", "))
	}
	if since, ok := agent.Retired(model); ok {
		msg += fmt.Sprintf("; DeepSeek retired %q on %s: use %s (--model %s)", agent.ModelID(model), since, agent.ModelDeepSeekFlash, agent.ModelDeepSeekFlash)
	} else {
		msg += "; choose another model (--model, or the editor's model menu)"
	}
	return &providerError{msg: p.redact(msg), kinds: []error{agent.ErrProvider, ErrModelNotServed}, cause: err}
}

// imageRefused is the error for a request with images that the endpoint
// refused because of one (too large, a type it does not read), naming the
// images; nil when err is something else or the request had none.
func (p *Provider) imageRefused(err error, names []string) error {
	var se *statusError
	if len(names) == 0 || !errors.As(err, &se) {
		return nil
	}
	switch {
	case se.status == http.StatusRequestEntityTooLarge, se.status == http.StatusUnsupportedMediaType:
	case se.status >= 400 && se.status < 500 && strings.Contains(strings.ToLower(se.message), "image"):
	default:
		return nil
	}
	msg := fmt.Sprintf("the model endpoint %s refused the image %s (%d %s%s); send a smaller PNG or JPEG, or leave it out",
		p.endpoint, strings.Join(names, ", "), se.status, http.StatusText(se.status), serverMessage(se.message))
	if len(names) > 1 {
		msg = fmt.Sprintf("the model endpoint %s refused one of the images %s (%d %s%s); send smaller PNGs or JPEGs, or leave them out",
			p.endpoint, strings.Join(names, ", "), se.status, http.StatusText(se.status), serverMessage(se.message))
	}
	return &providerError{msg: p.redact(msg), kinds: []error{agent.ErrProvider, agent.ErrImageRefused}, cause: err}
}

// thinkingRefused is the error for a request the endpoint refused because
// of the thought level it carried (a model that does not think, an effort
// the server does not know), naming the model, the level and how to turn it
// down; nil when err is something else or the request asked for no level.
// Ollama answers 400 `"deepseek-coder-v2" does not support thinking` or
// `think value "xhigh" is not supported for this model`; OpenAI 400
// "Unsupported value: 'reasoning_effort' …".
func (p *Provider) thinkingRefused(err error, model, level string) error {
	var se *statusError
	if level == "" || !errors.As(err, &se) || se.status != http.StatusBadRequest && se.status != http.StatusUnprocessableEntity {
		return nil
	}
	m := strings.ToLower(se.message)
	if strings.Contains(m, "reasoning_content") || !containsAny(m, "support thinking", "think value", "reasoning_effort", "reasoning effort", "thinking type") {
		return nil
	}
	sent := thinkingFields(model, level)
	fix := "set Thinking to Off (the editor's thought_level option) or start dsh-acp with --thinking off"
	switch {
	case !agent.IsDeepSeek(model):
		fix = "choose another Thinking level (the editor's thought_level option), or start dsh-acp without --thinking (DSH_THINKING, thinking in config.toml) if this model takes no reasoning_effort"
	case level == agent.ThinkingMax:
		// A server that knows no "max" effort (Ollama) may well think at
		// High: turning thinking off would throw more away than needed.
		fix = "set Thinking to High, or Off (the editor's thought_level option), or start dsh-acp with --thinking high"
	}
	msg := fmt.Sprintf("the model endpoint %s refused thought level %q for model %q (sent as %s; %d %s%s): %s",
		p.endpoint, level, model, fieldsText(sent), se.status, http.StatusText(se.status), serverMessage(se.message), fix)
	return &providerError{msg: p.redact(msg), kinds: []error{agent.ErrProvider}, cause: err}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// fieldsText is request fields as a reader sees them, in a fixed order.
func fieldsText(fields map[string]json.RawMessage) string {
	var parts []string
	for _, k := range []string{"thinking", "reasoning_effort"} {
		if v, ok := fields[k]; ok {
			parts = append(parts, fmt.Sprintf("%q: %s", k, v))
		}
	}
	return strings.Join(parts, ", ")
}
