// Package mockllm is a model endpoint on 127.0.0.1 for tests, faithful to
// how the endpoints people use behave (shared/endpoints.md, read
// 2026-12-01), not to what our client expects:
//
//   - DeepSeek: refuses an id it does not serve with 400 "Model Not Exist";
//     in thinking mode (the default) refuses a request whose assistant
//     messages with tool calls lack reasoning_content (also the empty
//     string) with 400; streams reasoning as reasoning_content; reports
//     prompt_cache_hit_tokens / prompt_cache_miss_tokens; refuses images
//     for a model that does not read them;
//   - OpenRouter: reasoning as "reasoning", usage with cost (USD) and
//     prompt_tokens_details.cached_tokens, 404 model_not_found;
//   - Ollama: tool calls finish with "stop" and every call has index 0,
//     reasoning as "reasoning", no key, 404 `model "x" not found`;
//     reasoning_effort only high, medium, low or none, and only none for a
//     model that cannot think.
//
// Every flavour serves GET /models. Only tests import it.
package mockllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Flavor is which endpoint the mock behaves like.
type Flavor int

const (
	DeepSeek Flavor = iota
	OpenRouter
	Ollama
)

// DeepSeekModels are the ids DeepSeek serves (2026-12-01).
var DeepSeekModels = []string{"deepseek-flash", "deepseek-v4-pro", "deepseek-v4-flash"}

// visionModels are DeepSeek's ids that read images.
var visionModels = map[string]bool{"deepseek-flash": true, "deepseek-v4-flash": true}

// Call is a tool call of a reply.
type Call struct{ ID, Name, Args string }

// Reply is what one chat request gets.
type Reply struct {
	Reasoning string
	Text      string
	Calls     []Call
	// Finish is the finish_reason; empty means the flavour's own
	// (tool_calls, or stop; Ollama: stop) and "-" sends none.
	Finish string
	// NoDone leaves out the final [DONE]; Hold then keeps the connection
	// open until the client goes away.
	NoDone, Hold bool
	// NoUsage leaves the usage chunk out.
	NoUsage bool
	// Comments is how many ": keep-alive" lines come first; with
	// OnlyComments the reply is nothing but comments until the client goes.
	Comments     int
	OnlyComments bool
	// Status, when set, answers with this HTTP status and Body.
	Status int
	Body   string
}

// Options configure a Server.
type Options struct {
	Flavor Flavor
	// Models are the ids served; nil means the flavour's (DeepSeekModels
	// for DeepSeek).
	Models []string
	// Key, when set, is the bearer key every request must carry.
	Key string
	// Reply answers chat request n (0-based); nil answers "ok".
	Reply func(n int, req Request) Reply
	// NoThinking are models that cannot think: Ollama refuses a
	// reasoning_effort other than "none" for them.
	NoThinking []string
}

// Request is a chat request as the mock received it.
type Request struct {
	Body map[string]any
	Raw  []byte
	// n is the request's number, from 0.
	n int
}

// Messages are the request's messages.
func (r Request) Messages() []map[string]any {
	raw, _ := r.Body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// Server is a running mock endpoint.
type Server struct {
	// URL is the base URL to give the client ("http://127.0.0.1:N/v1").
	URL  string
	opts Options
	srv  *httptest.Server

	// mu guards reqs, usages, last and auths.
	mu   sync.Mutex
	reqs []Request
	// auths is the Authorization header of every request received, in
	// order ("" for none), refused ones included.
	auths []string
	// usages[n] is the usage sent for request n; nil when none was.
	usages []map[string]any
	// last is the previous request's messages, for the cache counters.
	last []byte
}

// New starts a Server, closed when t ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Models == nil {
		switch opts.Flavor {
		case DeepSeek:
			opts.Models = DeepSeekModels
		case OpenRouter:
			opts.Models = []string{"deepseek/deepseek-v4-flash", "openai/gpt-5"}
		case Ollama:
			opts.Models = []string{"qwen3:8b"}
		}
	}
	s := &Server{opts: opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Requests are the chat requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Usages are the usage objects sent, one per chat request received so far
// (nil for a request answered without one), in the endpoint's own fields.
func (s *Server) Usages() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(s.reqs))
	copy(out, s.usages)
	return out
}

// Auths are the Authorization headers of every request received so far
// (models listings and refused requests included; "" where none was sent).
func (s *Server) Auths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auths = append(s.auths, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
		writeError(w, http.StatusUnauthorized, "Authentication Fails, Your api key is invalid", "authentication_error", "invalid_request_error")
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		s.models(w)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) models(w http.ResponseWriter) {
	data := make([]map[string]any, 0, len(s.opts.Models))
	for _, m := range s.opts.Models {
		data = append(data, map[string]any{"id": m, "object": "model", "owned_by": "mock"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "invalid_request_error")
		return
	}
	req := Request{Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type", "invalid_request_error", "invalid_request_error")
		return
	}
	s.mu.Lock()
	n := len(s.reqs)
	req.n = n
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if status, msg, code := s.refuse(req); status != 0 {
		typ := "invalid_request_error"
		if s.opts.Flavor == Ollama {
			typ = "api_error"
		}
		writeError(w, status, msg, typ, code)
		return
	}
	reply := Reply{Text: "ok"}
	if s.opts.Reply != nil {
		reply = s.opts.Reply(n, req)
	}
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	s.stream(w, r, req, reply)
}

// refuse is the endpoint's own validation: status 0 lets the request on.
func (s *Server) refuse(req Request) (status int, msg, code string) {
	model, _ := req.Body["model"].(string)
	if !slices.Contains(s.opts.Models, model) {
		return s.unknownModel(model)
	}
	if s.opts.Flavor == Ollama {
		return s.refuseOllama(req, model)
	}
	if s.opts.Flavor != DeepSeek {
		return 0, "", ""
	}
	msg = refuseOptions(req)
	if msg == "" {
		msg = s.refuseMessages(req, model)
	}
	if msg == "" {
		return 0, "", ""
	}
	return http.StatusBadRequest, msg, "invalid_request_error"
}

// unknownModel is each flavour's answer for a model it does not serve.
func (s *Server) unknownModel(model string) (status int, msg, code string) {
	switch s.opts.Flavor {
	case DeepSeek:
		return http.StatusBadRequest, "Model Not Exist", "invalid_request_error"
	case OpenRouter:
		return http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist", model), "model_not_found"
	default:
		return http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", model), ""
	}
}

// refuseOllama is Ollama's refusal of a reasoning_effort: it maps high,
// medium and low to thinking and none to none, refuses any other value,
// and refuses thinking for a model that cannot.
func (s *Server) refuseOllama(req Request, model string) (status int, msg, code string) {
	e, ok := req.Body["reasoning_effort"]
	switch {
	case !ok || e == "none":
		return 0, "", ""
	case e != "high" && e != "medium" && e != "low":
		return http.StatusBadRequest, fmt.Sprintf("think value %q is not supported for this model", e), ""
	case slices.Contains(s.opts.NoThinking, model):
		return http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", model), ""
	}
	return 0, "", ""
}

// refuseOptions is DeepSeek's refusal of a thinking type or reasoning
// effort it does not know; "" when there is none.
func refuseOptions(req Request) string {
	if t, ok := req.Body["thinking"].(map[string]any); ok {
		if typ := t["type"]; typ != "enabled" && typ != "disabled" {
			return fmt.Sprintf("invalid thinking type %v", typ)
		}
	}
	// DeepSeek's thinking-mode guide maps minimal to low, medium and xhigh
	// to high, ultra to max.
	if e, ok := req.Body["reasoning_effort"]; ok {
		if v, _ := e.(string); !slices.Contains([]string{"minimal", "low", "medium", "high", "xhigh", "max", "ultra"}, v) {
			return fmt.Sprintf("invalid reasoning_effort %v", e)
		}
	}
	return ""
}

// refuseMessages is DeepSeek's refusal of the first message it cannot
// take; "" when there is none.
func (s *Server) refuseMessages(req Request, model string) string {
	for i, m := range req.Messages() {
		if _, calls := m["tool_calls"]; calls && m["role"] == "assistant" && s.thinking(req) {
			if _, ok := m["reasoning_content"].(string); !ok {
				return fmt.Sprintf("The `reasoning_content` in the thinking mode must be passed back to the API. (message index %d)", i)
			}
		}
		if msg := checkImages(m, model); msg != "" {
			return msg
		}
	}
	return ""
}

// checkImages refuses image parts a model does not read or a data URL that
// is not an image.
func checkImages(m map[string]any, model string) string {
	parts, _ := m["content"].([]any)
	for _, p := range parts {
		part, _ := p.(map[string]any)
		if part["type"] != "image_url" {
			continue
		}
		if !visionModels[model] {
			return fmt.Sprintf("Model %s does not support image input", model)
		}
		iu, _ := part["image_url"].(map[string]any)
		url, _ := iu["url"].(string)
		if !strings.HasPrefix(url, "data:image/") || !strings.Contains(url, ";base64,") {
			return "Invalid image: unsupported image format"
		}
	}
	return ""
}

// thinking: DeepSeek thinks unless the request turns it off.
func (s *Server) thinking(req Request) bool {
	t, ok := req.Body["thinking"].(map[string]any)
	return !ok || t["type"] != "disabled"
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i := 0; i < reply.Comments; i++ {
		_, _ = io.WriteString(w, ": keep-alive\n\n")
		w.(http.Flusher).Flush()
	}
	if reply.OnlyComments {
		keepAliveOnly(w, r)
		return
	}
	ev := events{w: w, model: req.Body["model"]}
	s.streamContent(ev, req, reply)
	s.streamEnd(ev, req, reply)
	if !reply.NoDone {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		return
	}
	if reply.Hold {
		<-r.Context().Done()
	}
}

// events writes a stream's server-sent events.
type events struct {
	w     http.ResponseWriter
	model any
}

// send writes v as one event.
func (e events) send(v any) {
	b, _ := json.Marshal(v)
	_, _ = fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.w.(http.Flusher).Flush()
}

// chunk is a completion chunk of one choice.
func (e events) chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": e.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
}

// streamContent sends the reply's reasoning, text and tool calls, in the
// flavour's fields.
func (s *Server) streamContent(ev events, req Request, reply Reply) {
	if reply.Reasoning != "" && (s.opts.Flavor != DeepSeek || s.thinking(req)) {
		field := "reasoning"
		if s.opts.Flavor == DeepSeek {
			field = "reasoning_content"
		}
		ev.send(ev.chunk(map[string]any{"role": "assistant", "content": nil, field: reply.Reasoning}, nil))
	}
	if reply.Text != "" {
		ev.send(ev.chunk(map[string]any{"content": reply.Text}, nil))
	}
	for i, c := range reply.Calls {
		index := i
		if s.opts.Flavor == Ollama {
			index = 0
		}
		ev.send(ev.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": index, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}}}}, nil))
	}
}

// streamEnd sends the finishing chunk and the usage, where the flavour
// puts them.
func (s *Server) streamEnd(ev events, req Request, reply Reply) {
	finish := s.finishReason(reply)
	usage := s.usage(req, reply)
	// Noted before it is sent: a client may act on it at once.
	if !reply.NoUsage && finish != "-" {
		s.mu.Lock()
		for len(s.usages) <= req.n {
			s.usages = append(s.usages, nil)
		}
		s.usages[req.n] = usage
		s.mu.Unlock()
	}
	switch {
	case finish == "-":
	case s.opts.Flavor == DeepSeek && !reply.NoUsage:
		// DeepSeek: usage rides on the finishing chunk.
		c := ev.chunk(map[string]any{"content": ""}, finish)
		c["usage"] = usage
		ev.send(c)
	default:
		ev.send(ev.chunk(map[string]any{}, finish))
	}
	if s.opts.Flavor != DeepSeek && !reply.NoUsage && finish != "-" {
		ev.send(map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	}
}

// finishReason is the reply's finish_reason: its own, else the
// flavour's ("-": none).
func (s *Server) finishReason(reply Reply) string {
	switch {
	case reply.Finish != "":
		return reply.Finish
	case len(reply.Calls) > 0 && s.opts.Flavor != Ollama:
		return "tool_calls"
	}
	// Ollama ends tool calls with "stop" too.
	return "stop"
}

// keepAliveOnly sends nothing but keep-alive comments until the client goes.
func keepAliveOnly(w http.ResponseWriter, r *http.Request) {
	// DeepSeek sends a keep-alive every few seconds while a request
	// queues; faster here so a short --model-timeout sees many.
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// usage counts tokens as bytes/4. The cache hit is the prefix this request
// shares with the previous one, as DeepSeek's context cache serves it.
func (s *Server) usage(req Request, reply Reply) map[string]any {
	msgs, _ := json.Marshal(req.Body["messages"])
	s.mu.Lock()
	shared := commonPrefix(s.last, msgs)
	s.last = msgs
	s.mu.Unlock()
	prompt := len(msgs)/4 + 1
	hit := shared / 4
	completion := (len(reply.Reasoning)+len(reply.Text))/4 + 1
	for _, c := range reply.Calls {
		completion += (len(c.Name) + len(c.Args)) / 4
	}
	u := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	switch s.opts.Flavor {
	case DeepSeek:
		u["prompt_cache_hit_tokens"] = hit
		u["prompt_cache_miss_tokens"] = prompt - hit
	case OpenRouter:
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": hit}
		u["completion_tokens_details"] = map[string]any{"reasoning_tokens": len(reply.Reasoning) / 4}
		// A made-up but deterministic price: $1 per million tokens.
		u["cost"] = float64(prompt+completion) / 1e6
	}
	return u
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return len(bytes.TrimSpace(a[:i]))
}
