package main

import (
	"context"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/signin"
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
// The endpoint's provider op is asked when there is one, so a key a
// sign-in set reaches the listing too.
func newModelLister(cfg *config, op *openai.Provider) acp.ModelLister {
	if op != nil {
		return modelsFunc(op.Models)
	}
	if cfg.script != "" && cfg.baseURL == "" {
		return nil
	}
	p, err := openai.New(openai.Options{BaseURL: cfg.baseURL, Model: cfg.model, Key: signin.Lookup(cfg.getenv, cfg.baseURL)})
	if err != nil {
		return nil
	}
	return modelsFunc(p.Models)
}

// modelsFunc adapts a function to acp.ModelLister.
type modelsFunc func(ctx context.Context) ([]string, error)

func (f modelsFunc) ListModels(ctx context.Context) ([]string, error) { return f(ctx) }
