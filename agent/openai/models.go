package openai

import (
	"context"
	"fmt"
	"time"
)

// ModelsTimeout bounds Models: the list is a convenience for a model menu,
// and a caller that does not get it in time falls back to its own model.
const ModelsTimeout = 3 * time.Second

// Models lists the ids the endpoint serves (GET /models), in the endpoint's
// order. It gives up after ModelsTimeout or when ctx ends. Any failure — no
// such route (many local servers), a refused key, a timeout — is returned
// naming the endpoint; the caller decides what to show instead.
func (p *Provider) Models(ctx context.Context) ([]string, error) {
	key, err := p.requestKey()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ModelsTimeout)
	defer cancel()
	d := &watchedDoer{client: p.http}
	list, err := p.client(d, key).ListModels(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("list models at %s: %w", p.endpoint, ctx.Err())
		}
		return nil, fmt.Errorf("list models at %s: %w", p.endpoint, p.redactErr(d.requestError(err)))
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}
