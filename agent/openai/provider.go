// Package openai is an agent.Provider over any OpenAI-compatible
// chat-completions endpoint (DeepSeek, OpenAI, Ollama, vLLM, llama.cpp …)
// with streaming and tool calls. Request types, HTTP and SSE line framing
// come from github.com/sashabaranov/go-openai, a client of the chat API and
// little else; this package adds what that client cannot know: the
// reasoning fields of DeepSeek and Ollama, a watchdog for endpoints that go
// silent, a retry policy that only retries while nothing has been shown to
// the user, and errors a user can act on.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
)

const (
	// DefaultBaseURL is DeepSeek's API; see Options.BaseURL for the rule
	// that turns it into the request URL.
	DefaultBaseURL = "https://api.deepseek.com"
	// DefaultModel is DeepSeek's current general model (agent/models.go).
	DefaultModel = agent.ModelDeepSeekFlash
	// DefaultMaxRetries is how often a failed request is retried when
	// Options.MaxRetries is zero.
	DefaultMaxRetries = 3
	// DefaultIdleTimeout is how long an endpoint may send nothing (before
	// its answer starts or between two chunks) when Options.IdleTimeout is
	// zero.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultFinishGrace is how long the usage chunk that may follow a
	// finish_reason is waited for when Options.FinishGrace is zero.
	DefaultFinishGrace = 2 * time.Second
)

// maxRetryAfter bounds how long a server may ask us to wait: past it we stop
// retrying and report, because a user staring at a silent editor for minutes
// is worse than a clear "rate limited" message.
const maxRetryAfter = time.Minute

// Options configure a Provider. The zero value talks to DeepSeek with no key
// (which fails at Stream time with an actionable message).
type Options struct {
	// BaseURL is the endpoint prefix that "chat/completions" is appended to.
	// Empty means DefaultBaseURL. The rule, so that every common server works
	// with the URL its own docs print:
	//   - a URL with a path is used as is ("https://api.openai.com/v1",
	//     "http://localhost:11434/v1" for Ollama, "http://host:8000/v1" for
	//     vLLM, "http://host:8080/v1" for llama.cpp);
	//   - a URL with no path gets "/v1", which DeepSeek, OpenAI, Ollama, vLLM
	//     and llama.cpp all serve ("https://api.deepseek.com" →
	//     "https://api.deepseek.com/v1/chat/completions");
	//   - a pasted full endpoint ending in "/chat/completions" is trimmed to
	//     its prefix.
	BaseURL string
	// Model is the model name sent with every request. Empty means
	// DefaultModel.
	Model string
	// APIKey is sent as a bearer token. Empty is allowed for endpoints on a
	// loopback address (a local Ollama or llama.cpp needs none); for any other
	// endpoint Stream fails with ErrNoAPIKey before touching the network.
	APIKey string
	// Key, if set, is asked for the key before each request (and each
	// model listing) and wins over APIKey: a sign-in in another process —
	// the editor's terminal running dsh-acp login — stores a key while
	// this one runs, and the next request carries it. "" means none; a
	// non-nil error says why none can be used, and is added to the "no API
	// key" message. It is called for every request: it must be cheap.
	Key func() (string, error)
	// HTTPClient carries the requests. Nil means a client of our own with
	// no overall timeout (streams run as long as the model writes; silence
	// is bounded by IdleTimeout).
	HTTPClient *http.Client
	// IdleTimeout is how long the endpoint may send no byte at all — from
	// the request to the response headers, or between two reads of the
	// stream — before the request fails naming the endpoint. Keep-alive
	// comments count as bytes. Zero means DefaultIdleTimeout; negative means
	// wait forever (only a cancel ends a silent stream).
	IdleTimeout time.Duration
	// MaxRetries is how often a request is retried on 408, 409, 429, 5xx or a
	// connection failure, and only while no byte of the answer has reached
	// the caller. Zero means DefaultMaxRetries; negative means never retry.
	MaxRetries int
	// RetryBackoff returns the wait before retry number n (0-based) when the
	// server sent no Retry-After. Nil means 0.5s·2ⁿ capped at 8s. Tests pass
	// a func returning 0.
	RetryBackoff func(n int) time.Duration
	// FinishGrace is how long, after a finish_reason, a usage chunk is
	// waited for before the answer is returned without one. Zero means
	// DefaultFinishGrace.
	FinishGrace time.Duration
	// Logger receives retry and failure diagnostics (never the API key).
	// Nil means no logging.
	Logger *zap.Logger
}

// ErrNoAPIKey is returned (wrapped, and wrapping agent.ErrProvider and
// agent.ErrAuthRequired) by Stream and Check when the endpoint needs a key
// and none was configured.
var ErrNoAPIKey error = &providerError{
	msg:   agent.ErrProvider.Error() + ": no API key",
	kinds: []error{agent.ErrProvider, agent.ErrAuthRequired},
}

// noKey is ErrNoAPIKey for endpoint, saying how to sign in there; why,
// when set, says why no key can be used.
func noKey(endpoint string, why error) error {
	msg := fmt.Sprintf("%v for the model endpoint %s: sign in to it (dsh-acp login --base-url %s, or your editor's sign-in), or set DSH_API_KEY or DEEPSEEK_API_KEY", ErrNoAPIKey, endpoint, endpoint)
	if why != nil {
		msg += " (" + why.Error() + ")"
	}
	return &providerError{msg: msg, kinds: []error{ErrNoAPIKey, agent.ErrProvider, agent.ErrAuthRequired}}
}

// Provider implements agent.Provider. It is safe for concurrent use: every
// Stream call is independent.
type Provider struct {
	// endpoint is the normalised base URL, used in every error message.
	endpoint string
	model    string
	// loopback: the endpoint is on this machine and needs no key.
	loopback bool
	// keyMu guards apiKey, which a sign-in may set while requests run.
	keyMu  sync.RWMutex
	apiKey string
	// lookup is Options.Key.
	lookup      func() (string, error)
	maxRetries  int
	backoff     func(int) time.Duration
	log         *zap.Logger
	http        *http.Client
	idleTimeout time.Duration
	finishGrace time.Duration
}

var _ agent.Provider = (*Provider)(nil)

// New builds a Provider. It fails only on a malformed BaseURL; a missing key
// is reported by Check and Stream so the agent can still start without one.
func New(opts Options) (*Provider, error) {
	base, err := normalizeBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		endpoint:    strings.TrimSuffix(base.String(), "/"),
		model:       opts.Model,
		apiKey:      opts.APIKey,
		lookup:      opts.Key,
		loopback:    isLoopback(base.Hostname()),
		maxRetries:  opts.MaxRetries,
		backoff:     opts.RetryBackoff,
		log:         opts.Logger,
		http:        opts.HTTPClient,
		idleTimeout: opts.IdleTimeout,
		finishGrace: opts.FinishGrace,
	}
	if p.finishGrace <= 0 {
		p.finishGrace = DefaultFinishGrace
	}
	if p.model == "" {
		p.model = DefaultModel
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = DefaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	switch {
	case p.idleTimeout == 0:
		p.idleTimeout = DefaultIdleTimeout
	case p.idleTimeout < 0:
		p.idleTimeout = 0
	}
	if p.backoff == nil {
		p.backoff = defaultBackoff
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.log = p.log.With(zap.String("endpoint", p.endpoint), zap.String("model", p.model))

	if p.http == nil {
		p.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return p, nil
}

// Check reports a configuration problem that would make every Stream fail
// (today: a missing API key), so a caller can warn at startup.
func (p *Provider) Check() error {
	_, err := p.requestKey()
	return err
}

// requestKey is the key the next request carries ("" for a loopback
// endpoint without one), or ErrNoAPIKey saying how to sign in.
func (p *Provider) requestKey() (string, error) {
	key, why := p.currentKey()
	if key == "" && !p.loopback {
		return "", noKey(p.endpoint, why)
	}
	return key, nil
}

// currentKey is the key now: the one Options.Key finds, else the one set.
func (p *Provider) currentKey() (string, error) {
	p.keyMu.RLock()
	key, lookup := p.apiKey, p.lookup
	p.keyMu.RUnlock()
	if lookup != nil {
		k, err := lookup()
		if k != "" {
			return k, nil
		}
		if key == "" {
			return "", err
		}
	}
	return key, nil
}

// key is the API key requests carry now ("" with none).
func (p *Provider) key() string {
	k, _ := p.currentKey()
	return k
}

// SetAPIKey replaces the API key from the next request on, and stops
// looking one up (Options.Key): dsh-acp login checks the key it was given,
// whatever is stored.
func (p *Provider) SetAPIKey(key string) {
	p.keyMu.Lock()
	p.apiKey = key
	p.lookup = nil
	p.keyMu.Unlock()
}

// Endpoint is the normalised base URL requests go to.
func (p *Provider) Endpoint() string { return p.endpoint }

// Model is the model name sent with every request.
func (p *Provider) Model() string { return p.model }

// Stream sends req and streams the answer; see agent.Provider.
func (p *Provider) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	key, err := p.requestKey()
	if err != nil {
		return agent.Response{}, err
	}
	slots := newImageSlots()
	params, extras, err := p.build(req, slots)
	if err != nil {
		return agent.Response{}, fmt.Errorf("build model request: %w", err)
	}
	encoded, err := encodeRequest(params, extras, req.Thinking)
	if err != nil {
		return agent.Response{}, fmt.Errorf("encode model request: %w", err)
	}
	body, err := newBody(encoded, slots)
	if err != nil {
		return agent.Response{}, fmt.Errorf("encode model request: %w", err)
	}
	p.log.Debug("model request", zap.Int("messages", len(req.Messages)), zap.Int("tools", len(req.Tools)))
	for retry := 0; ; retry++ {
		resp, delivered, err := p.attempt(ctx, key, params, body, emit)
		if err == nil {
			p.log.Debug("model answer", zap.String("finish", string(resp.FinishReason)),
				zap.Int("text_bytes", len(resp.Message.Content)), zap.Int("tool_calls", len(resp.Message.ToolCalls)),
				zap.Bool("usage_reported", resp.Usage.Reported), zap.Int("prompt_tokens", resp.Usage.PromptTokens),
				zap.Int("completion_tokens", resp.Usage.CompletionTokens))
			return resp, nil
		}
		if ctx.Err() != nil {
			return agent.Response{}, fmt.Errorf("model request to %s: %w", p.endpoint, ctx.Err())
		}
		if delivered || !retryable(err) || retry >= p.maxRetries {
			p.log.Warn("model request failed", zap.Int("retries", retry), zap.String("error", p.redact(err.Error())))
			return agent.Response{}, p.failure(ctx, err, retry, params.Model, req)
		}
		delay, ok := p.retryDelay(err, retry)
		if !ok {
			p.log.Warn("model request failed; server asked for a long wait", zap.Int("retries", retry))
			return agent.Response{}, p.describe(err, retry)
		}
		p.log.Info("retrying model request",
			zap.Int("retry", retry+1), zap.Duration("delay", delay), zap.String("error", p.redact(err.Error())))
		if err := sleep(ctx, delay); err != nil {
			return agent.Response{}, fmt.Errorf("model request to %s: %w", p.endpoint, err)
		}
	}
}

// failure is the error of a request that will not be tried again: what
// the endpoint refused (the model, an image, the thought level) when it
// said so, else err described.
func (p *Provider) failure(ctx context.Context, err error, retries int, model string, req agent.Request) error {
	if missing := p.modelMissing(ctx, model, err); missing != nil {
		return missing
	}
	if refused := p.imageRefused(err, imageNames(req)); refused != nil {
		return refused
	}
	if refused := p.thinkingRefused(err, model, req.Thinking); refused != nil {
		return refused
	}
	return p.describe(err, retries)
}

// attempt runs one HTTP request. delivered reports whether any delta was
// emitted (or any tool call started), after which a retry would duplicate
// output the user already saw.
func (p *Provider) attempt(ctx context.Context, key string, params goopenai.ChatCompletionRequest, body *requestBody, emit func(agent.Delta)) (agent.Response, bool, error) {
	d := &watchedDoer{client: p.http, idle: p.idleTimeout, body: body}
	stream, err := p.client(d, key).CreateChatCompletionStream(ctx, params)
	if err != nil {
		return agent.Response{}, false, d.requestError(err)
	}
	defer stream.Close()
	var (
		acc   accumulator
		grace *time.Timer
	)
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if acc.finished {
				// The answer was complete; what broke is the wait for
				// its usage (or for [DONE]).
				break
			}
			return agent.Response{}, acc.delivered(), streamError(ctx, err)
		}
		if err := acc.add(raw, emit); err != nil {
			return agent.Response{}, acc.delivered(), err
		}
		if acc.finished && acc.usage.Reported {
			// Usage rides on the last chunk: nothing more is needed, and
			// an endpoint that keeps the connection open must not turn a
			// finished answer into a stall.
			break
		}
		if acc.finished && grace == nil {
			// A finish_reason ends the answer; usage may follow in one
			// more chunk, which is waited for briefly, never for [DONE].
			grace = time.AfterFunc(p.finishGrace, func() { stream.Close() })
			defer grace.Stop()
		}
	}
	if !acc.finished && !acc.callsComplete() {
		return agent.Response{}, acc.delivered(), &endedEarlyError{}
	}
	return acc.response(), true, nil
}

// client is a go-openai client for one attempt, carrying key (none when
// ""): the doer carries that attempt's watchdog and keeps its response
// headers (Retry-After).
func (p *Provider) client(d goopenai.HTTPDoer, key string) *goopenai.Client {
	// DefaultConfig rather than anything reading OPENAI_* variables: this
	// program's configuration is its own flags and DSH_* variables.
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = p.endpoint
	cfg.HTTPClient = d
	// Lines that are not data (blank lines, DeepSeek's ": keep-alive"
	// comments while a request queues) are normal; silence is bounded by
	// the watchdog instead of by a count.
	cfg.EmptyMessagesLimit = ^uint(0)
	return goopenai.NewClientWithConfig(cfg)
}

// streamError classifies a failed read of the stream body.
func streamError(ctx context.Context, err error) error {
	var (
		apiErr   *goopenai.APIError
		stallErr *stallError
		largeErr *tooLargeError
	)
	switch {
	case errors.As(err, &stallErr), errors.As(err, &largeErr), ctx.Err() != nil:
		return err
	case errors.As(err, &apiErr):
		// go-openai turns a `data: {"error":…}` event into an APIError.
		return &eventError{message: apiErr.Message}
	default:
		// A read failed after the response headers arrived: for the user
		// the stream ended early, whatever the transport says.
		return &endedEarlyError{cause: err}
	}
}

func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond << min(n, 4)
	return min(d, 8*time.Second)
}

// sleep waits d or until ctx is done; a timer rather than time.After so a
// cancelled wait does not leave a timer behind.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Endpoint is raw as requests see it, the normalised base URL (see
// Options.BaseURL; "" is DefaultBaseURL's): scheme, host, port and path,
// without the trailing slash — what Provider.Endpoint says, and what a
// stored key is kept for.
func Endpoint(raw string) (string, error) {
	u, err := normalizeBaseURL(raw)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func normalizeBaseURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http:// or https:// and a host, e.g. %s", raw, DefaultBaseURL)
	}
	// One endpoint, one spelling: the scheme and host in lower case, no
	// default port (a stored key is kept per
	// endpoint, and HTTPS://API.DEEPSEEK.COM:443 is DeepSeek's too).
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if p := u.Port(); p == "443" && u.Scheme == "https" || p == "80" && u.Scheme == "http" {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/chat/completions")
	if u.Path == "" {
		u.Path = "/v1"
	}
	u.Path += "/"
	u.RawPath = ""
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
