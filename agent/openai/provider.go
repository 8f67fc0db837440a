// Package openai is an agent.Provider over any OpenAI-compatible
// chat-completions endpoint (DeepSeek, OpenAI, Ollama, vLLM, llama.cpp …)
// with streaming and tool calls. HTTP, SSE decoding and the typed chunk
// structs come from github.com/openai/openai-go/v3; this package adds the
// parts that client cannot know: DeepSeek's reasoning_content, a retry policy
// that only retries while nothing has been shown to the user, and errors a
// user can act on.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
)

const (
	// DefaultBaseURL is DeepSeek's API; see Options.BaseURL for the rule
	// that turns it into the request URL.
	DefaultBaseURL = "https://api.deepseek.com"
	// DefaultModel is DeepSeek's general chat model.
	DefaultModel = "deepseek-chat"
	// DefaultMaxRetries is how often a failed request is retried when
	// Options.MaxRetries is zero.
	DefaultMaxRetries = 3
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
	// HTTPClient carries the requests. Nil means a client of our own with
	// no overall timeout (streams run as long as the model writes).
	HTTPClient *http.Client
	// MaxRetries is how often a request is retried on 408, 409, 429, 5xx or a
	// connection failure, and only while no byte of the answer has reached
	// the caller. Zero means DefaultMaxRetries; negative means never retry.
	MaxRetries int
	// RetryBackoff returns the wait before retry number n (0-based) when the
	// server sent no Retry-After. Nil means 0.5s·2ⁿ capped at 8s. Tests pass
	// a func returning 0.
	RetryBackoff func(n int) time.Duration
	// Logger receives retry and failure diagnostics (never the API key).
	// Nil means no logging.
	Logger *zap.Logger
}

// ErrNoAPIKey is returned (wrapped, and wrapping agent.ErrProvider) by Stream
// and Check when the endpoint needs a key and none was configured.
var ErrNoAPIKey = fmt.Errorf("%w: no API key: set DSH_API_KEY or DEEPSEEK_API_KEY", agent.ErrProvider)

// Provider implements agent.Provider. It is safe for concurrent use: every
// Stream call is independent.
type Provider struct {
	// endpoint is the normalised base URL, used in every error message.
	endpoint    string
	model       string
	apiKey      string
	needsKey    bool
	maxRetries  int
	backoff     func(int) time.Duration
	log         *zap.Logger
	completions openaisdk.ChatCompletionService
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
		endpoint:   strings.TrimSuffix(base.String(), "/"),
		model:      opts.Model,
		apiKey:     opts.APIKey,
		needsKey:   opts.APIKey == "" && !isLoopback(base.Hostname()),
		maxRetries: opts.MaxRetries,
		backoff:    opts.RetryBackoff,
		log:        opts.Logger,
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
	if p.backoff == nil {
		p.backoff = defaultBackoff
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.log = p.log.With(zap.String("endpoint", p.endpoint), zap.String("model", p.model))

	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// NewChatCompletionService rather than NewClient: the latter folds in
	// OPENAI_* environment variables (key, base URL, org headers), and this
	// program's configuration is its own flags and DSH_* variables.
	reqOpts := []option.RequestOption{
		option.WithBaseURL(base.String()),
		option.WithHTTPClient(hc),
		// Retries are ours (see Stream): the SDK cannot tell whether a
		// stream already delivered text, and we need the count for messages.
		option.WithMaxRetries(0),
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey))
	}
	p.completions = openaisdk.NewChatCompletionService(reqOpts...)
	return p, nil
}

// Check reports a configuration problem that would make every Stream fail
// (today: a missing API key), so a caller can warn at startup.
func (p *Provider) Check() error {
	if p.needsKey {
		return fmt.Errorf("%w (the model endpoint %s needs one)", ErrNoAPIKey, p.endpoint)
	}
	return nil
}

// Endpoint is the normalised base URL requests go to.
func (p *Provider) Endpoint() string { return p.endpoint }

// Model is the model name sent with every request.
func (p *Provider) Model() string { return p.model }

// Stream sends req and streams the answer; see agent.Provider.
func (p *Provider) Stream(ctx context.Context, req agent.Request, emit func(agent.Delta)) (agent.Response, error) {
	if err := p.Check(); err != nil {
		return agent.Response{}, err
	}
	params, err := p.buildParams(req)
	if err != nil {
		return agent.Response{}, fmt.Errorf("build model request: %w", err)
	}
	p.log.Debug("model request", zap.Int("messages", len(req.Messages)), zap.Int("tools", len(req.Tools)))
	for retry := 0; ; retry++ {
		resp, delivered, err := p.attempt(ctx, params, emit)
		if err == nil {
			p.log.Debug("model answer", zap.String("finish", string(resp.FinishReason)),
				zap.Int("text_bytes", len(resp.Message.Content)), zap.Int("tool_calls", len(resp.Message.ToolCalls)))
			return resp, nil
		}
		if ctx.Err() != nil {
			return agent.Response{}, fmt.Errorf("model request to %s: %w", p.endpoint, ctx.Err())
		}
		if delivered || !retryable(err) || retry >= p.maxRetries {
			p.log.Warn("model request failed", zap.Int("retries", retry), zap.String("error", p.redact(err.Error())))
			return agent.Response{}, p.describe(err, retry)
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

// attempt runs one HTTP request. delivered reports whether any delta was
// emitted (or any tool call started), after which a retry would duplicate
// output the user already saw.
func (p *Provider) attempt(ctx context.Context, params openaisdk.ChatCompletionNewParams, emit func(agent.Delta)) (agent.Response, bool, error) {
	stream := p.completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc accumulator
	for stream.Next() {
		acc.add(stream.Current(), emit)
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() == nil && brokeMidStream(err) {
			// A read failed after the response headers arrived: for the
			// user the stream ended early, whatever the transport says.
			err = &endedEarlyError{cause: err}
		}
		return agent.Response{}, acc.delivered(), err
	}
	if !acc.finished {
		return agent.Response{}, acc.delivered(), &endedEarlyError{}
	}
	return acc.response(), true, nil
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

// brokeMidStream reports whether err came from reading the response body,
// as opposed to an error status, a failed connection (the HTTP client
// returns those as *url.Error), an error event or an undecodable chunk.
func brokeMidStream(err error) bool {
	var (
		apiErr    *openaisdk.Error
		urlErr    *url.Error
		streamErr *ssestream.StreamError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	return !errors.As(err, &apiErr) && !errors.As(err, &urlErr) && !errors.As(err, &streamErr) &&
		!errors.As(err, &syntaxErr) && !errors.As(err, &typeErr)
}
