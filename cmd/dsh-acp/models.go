package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent/openai"
)

// modelName is the configured model: --model, else the provider's default.
func modelName(cfg *config) string {
	if cfg.model != "" {
		return cfg.model
	}
	return openai.DefaultModel
}

// newModelLister lists the endpoint's models for the model config option.
// A scripted run asks an endpoint only when --base-url names one, so an
// offline run never reaches the network.
//
// TODO(integrator): use agent/openai's ListModels once it is on main; this
// is the same request (GET <endpoint>/models, OpenAI's list shape).
func newModelLister(cfg *config) acp.ModelLister {
	if cfg.script != "" && cfg.baseURL == "" {
		return nil
	}
	p, err := openai.New(openai.Options{BaseURL: cfg.baseURL, Model: cfg.model})
	if err != nil {
		return nil
	}
	return &httpModels{url: p.Endpoint() + "/models", key: cfg.apiKey}
}

type httpModels struct {
	url string
	key string
}

func (m *httpModels) ListModels(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if m.key != "" {
		req.Header.Set("Authorization", "Bearer "+m.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The URL error names the endpoint, never the key (a header).
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list models: GET %s: %s", m.url, resp.Status)
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("list models: GET %s: %w", m.url, err)
	}
	names := make([]string, 0, len(body.Data))
	for _, d := range body.Data {
		names = append(names, d.ID)
	}
	return names, nil
}
