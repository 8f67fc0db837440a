package agent

import "strings"

// DeepSeek's model ids and what they are, as its API docs and changelog
// said when read on 2026-12-01 (https://api-docs.deepseek.com, "Models &
// Pricing" and "Change Log"): deepseek-chat and deepseek-reasoner stopped
// working on 2026-07-24; since 2026-09-10 deepseek-flash is DeepSeek V4.1
// Flash (it reads images) and deepseek-v4-pro the larger model;
// deepseek-v4-flash is routed to V4.1 Flash for now. All three have a
// 1,000,000-token window and think by default.
const (
	// ModelDeepSeekFlash is the default model.
	ModelDeepSeekFlash = "deepseek-flash"
	// RetiredSince is the day DeepSeek's retired ids stopped working.
	RetiredSince = "2026-07-24"
)

// modelInfo is what we know of a model.
type modelInfo struct {
	// window is the context window in tokens.
	window int
	// images: the model reads image_url content parts.
	images bool
	// price is the list price, nil when unknown.
	price *Price
}

// knownModels are the models we know, by ModelID.
var knownModels = map[string]modelInfo{
	"deepseek-flash":    {window: 1_000_000, images: true, price: &deepSeekFlashPrice},
	"deepseek-v4-flash": {window: 1_000_000, images: true, price: &deepSeekFlashPrice},
	"deepseek-v4-pro":   {window: 1_000_000, price: &deepSeekProPrice},
}

// retiredModels are ids an endpoint no longer serves, and since when.
var retiredModels = map[string]string{
	"deepseek-chat":     RetiredSince,
	"deepseek-reasoner": RetiredSince,
}

// ModelID is a model name as the model's maker spells it: lower case and
// without a gateway's "vendor/" prefix (OpenRouter's
// "deepseek/deepseek-v4-flash" is "deepseek-v4-flash"). Proxies and gateways
// put any base URL in front of a model, so the id, not the endpoint, says
// what the model is.
func ModelID(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	// Ollama-style tags ("deepseek-v4-flash:latest") name the same model.
	if i := strings.IndexByte(m, ':'); i >= 0 {
		m = m[:i]
	}
	return m
}

// IsDeepSeek reports whether model is one of DeepSeek's, whatever serves it:
// its request fields (thinking, reasoning_effort) and its reasoning_content
// rule apply.
func IsDeepSeek(model string) bool {
	return strings.HasPrefix(ModelID(model), "deepseek-")
}

// ReadsImages reports whether model is known to read images.
func ReadsImages(model string) bool {
	return knownModels[ModelID(model)].images
}

// Retired reports whether model is an id its maker retired, and since when.
func Retired(model string) (since string, ok bool) {
	since, ok = retiredModels[ModelID(model)]
	return since, ok
}
