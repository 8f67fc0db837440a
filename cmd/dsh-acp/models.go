package main

import (
	"context"

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
func newModelLister(cfg *config) acp.ModelLister {
	if cfg.script != "" && cfg.baseURL == "" {
		return nil
	}
	p, err := openai.New(openai.Options{BaseURL: cfg.baseURL, Model: cfg.model, APIKey: cfg.apiKey})
	if err != nil {
		return nil
	}
	return modelsFunc(p.Models)
}

// modelsFunc adapts a function to acp.ModelLister.
type modelsFunc func(ctx context.Context) ([]string, error)

func (f modelsFunc) ListModels(ctx context.Context) ([]string, error) { return f(ctx) }
