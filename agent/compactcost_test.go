package agent_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// summarizer answers a summary request with a summary, anything else "ok".
func summarizer(_ int, req mockllm.Request) mockllm.Reply {
	for _, m := range req.Messages() {
		if text, _ := m["content"].(string); strings.HasPrefix(text, "Summarize the conversation below.") {
			return mockllm.Reply{Text: "They listed files."}
		}
	}
	return mockllm.Reply{Text: "ok"}
}

// mockLoop is a Loop asking model at an endpoint like flavor, through the
// real OpenAI-compatible provider.
func mockLoop(t *testing.T, flavor mockllm.Flavor, model string, price *agent.Price) (*agent.Loop, *mockllm.Server) {
	t.Helper()
	m := mockllm.New(t, mockllm.Options{Flavor: flavor, Reply: summarizer})
	p, err := openai.New(openai.Options{BaseURL: m.URL, Model: model, APIKey: "sk-test", RetryBackoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, p)
	l.Model, l.Price = model, price
	return l, m
}

// priced is what the endpoint's usage u costs: its own usage.cost, else
// price (no cache counters: Ollama sends none).
func priced(t *testing.T, u map[string]any, price *agent.Price) float64 {
	t.Helper()
	if u == nil {
		t.Fatal("the endpoint sent no usage for a request")
	}
	if c, ok := u["cost"].(float64); ok {
		return c
	}
	prompt, completion := u["prompt_tokens"].(int), u["completion_tokens"].(int)
	return (float64(prompt)*price.In + float64(completion)*price.Out) / 1e6
}

// A compaction's summary request is paid for like any other request: its
// cost (the endpoint's own, else the price list) is in the session's
// cumulative cost the next usage update shows, and in the turn's; the
// context in use stays the last normal request's.
func TestCompactionIsCosted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		flavor mockllm.Flavor
		model  string
		price  *agent.Price
	}{
		{"endpoint's own cost", mockllm.OpenRouter, "deepseek/deepseek-v4-flash", nil},
		{"--price", mockllm.Ollama, "qwen3:8b", &agent.Price{In: 1, Cached: 0.5, Out: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			l, m := mockLoop(t, tt.flavor, tt.model, tt.price)
			l.ContextWindow = 1000
			before := agent.Cost{Amount: 1, Currency: "USD"}
			var rec recorder
			out, err := l.Run(ctx, agent.Turn{History: longHistory(4, 200), Prompt: "and now?",
				Usage: agent.ContextUsage{Used: 900, Size: 1000, Cost: before}, Emit: rec.emit})
			if err != nil {
				t.Fatal(err)
			}
			if ends := eventsOf(rec.list(), agent.EventCompactionEnd); len(ends) != 1 || ends[0].Err != nil {
				t.Fatalf("compactions %+v, want one that succeeded", ends)
			}
			usages := m.Usages()
			if len(usages) != 2 {
				t.Fatalf("%d requests, want the summary request and the answer", len(usages))
			}
			summary, answer := priced(t, usages[0], tt.price), priced(t, usages[1], tt.price)
			if summary <= 0 {
				t.Fatalf("the summary request cost %v", summary)
			}
			ups := eventsOf(rec.list(), agent.EventUsage)
			if len(ups) != 1 {
				t.Fatalf("%d usage updates, want 1", len(ups))
			}
			shown := ups[0].Usage
			if want := before.Amount + summary + answer; math.Abs(shown.Cost.Amount-want) > 1e-12 || shown.Cost.Currency != "USD" {
				t.Errorf("usage_update cost %+v, want %v USD (before %v + summary %v + answer %v)", shown.Cost, want, before.Amount, summary, answer)
			}
			if out.Usage != shown {
				t.Errorf("outcome usage %+v, want the one shown %+v", out.Usage, shown)
			}
			if math.Abs(out.Cost.Amount-(summary+answer)) > 1e-12 {
				t.Errorf("turn cost %+v, want %v", out.Cost, summary+answer)
			}
			if want := usages[1]["prompt_tokens"].(int) + usages[1]["completion_tokens"].(int); shown.Used != want {
				t.Errorf("used %d, want the answer's prompt+completion %d", shown.Used, want)
			}
			if want := usages[0]["prompt_tokens"].(int) + usages[1]["prompt_tokens"].(int); out.Spent.PromptTokens != want {
				t.Errorf("turn prompt tokens %d, want both requests' %d", out.Spent.PromptTokens, want)
			}
		})
	}
}

// /compact pays for its summary request too, in the usage update it sends.
func TestCompactCommandIsCosted(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	l, m := mockLoop(t, mockllm.OpenRouter, "deepseek/deepseek-v4-flash", nil)
	before := agent.Cost{Amount: 1, Currency: "USD"}
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{History: longHistory(2, 10), Prompt: "/compact",
		Usage: agent.ContextUsage{Used: 500, Size: 1000, Cost: before}, Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	usages := m.Usages()
	if len(usages) != 1 || out.History == nil {
		t.Fatalf("%d requests, history %v: want one summary request that compacted", len(usages), out.History)
	}
	summary := priced(t, usages[0], nil)
	ups := eventsOf(rec.list(), agent.EventUsage)
	if len(ups) != 1 || math.Abs(ups[0].Usage.Cost.Amount-(before.Amount+summary)) > 1e-12 {
		t.Fatalf("usage updates %+v, want one with cost %v", ups, before.Amount+summary)
	}
	if out.Usage != ups[0].Usage || math.Abs(out.Cost.Amount-summary) > 1e-12 || !out.Spent.Reported {
		t.Errorf("outcome usage %+v cost %+v spent %+v", out.Usage, out.Cost, out.Spent)
	}
}

// A turn that ends after a compaction and before an answer (the request
// after it failed) still tells the editor, and so the store, what the
// summary cost; the context in use stays the last known.
func TestCompactionCostShownWhenTheTurnFails(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	m := mockllm.New(t, mockllm.Options{Flavor: mockllm.OpenRouter, Reply: func(n int, req mockllm.Request) mockllm.Reply {
		if n == 0 {
			return summarizer(n, req)
		}
		return mockllm.Reply{Status: 400, Body: `{"error":{"message":"bad request","code":400}}`}
	}})
	p, err := openai.New(openai.Options{BaseURL: m.URL, Model: "deepseek/deepseek-v4-flash", APIKey: "sk-test", RetryBackoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, p)
	l.ContextWindow = 1000
	before := agent.ContextUsage{Used: 900, Size: 1000, Cost: agent.Cost{Amount: 1, Currency: "USD"}}
	var rec recorder
	out, err := l.Run(ctx, agent.Turn{History: longHistory(4, 200), Prompt: "and now?", Usage: before, Emit: rec.emit})
	if err == nil {
		t.Fatal("the turn succeeded, want the refused request's error")
	}
	summary := priced(t, m.Usages()[0], nil)
	ups := eventsOf(rec.list(), agent.EventUsage)
	if len(ups) != 1 {
		t.Fatalf("%d usage updates, want 1", len(ups))
	}
	want := before
	want.Cost.Amount += summary
	if got := ups[0].Usage; got.Used != want.Used || got.Size != want.Size || math.Abs(got.Cost.Amount-want.Cost.Amount) > 1e-12 {
		t.Errorf("usage update %+v, want %+v", got, want)
	}
	if out.Usage != ups[0].Usage {
		t.Errorf("outcome usage %+v, want the one shown", out.Usage)
	}
}
