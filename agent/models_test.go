package agent_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestAtMost64CallsOfOneAnswerRun(t *testing.T) {
	t.Parallel()
	calls := make([]agent.ToolCall, 100)
	for i := range calls {
		calls[i] = tc(fmt.Sprintf("c%d", i), "echo", fmt.Sprintf(`{"n":%d}`, i))
	}
	asked := 0
	echo := &fakeTool{name: "echo"}
	l := &agent.Loop{Provider: newReplay(t, callTools(calls...), say("done")), Tools: []tools.Tool{echo}}
	out, err := l.Run(testutil.Context(t), agent.Turn{
		Caller: tools.Caller{SessionID: "s", Cwd: t.TempDir()}, Prompt: "go",
		Approver: agent.ApproverFunc(func(context.Context, agent.CallInfo) (agent.Approval, error) {
			asked++
			return agent.Approval{Allowed: true}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(echo.calls) != agent.MaxCallsPerAnswer || asked != agent.MaxCallsPerAnswer {
		t.Errorf("ran %d calls and asked %d times, want %d", len(echo.calls), asked, agent.MaxCallsPerAnswer)
	}
	results := 0
	for _, m := range out.Messages {
		if m.Role != agent.RoleTool {
			continue
		}
		results++
		if results > agent.MaxCallsPerAnswer && !strings.Contains(m.Content, "at most 64 tool calls") {
			t.Errorf("result of call %d = %q, want the reason it did not run", results, m.Content)
		}
	}
	if results != len(calls) {
		t.Errorf("%d results, want one per call (%d)", results, len(calls))
	}
}

// usageStep answers text with the given usage.
func usageStep(u agent.Usage) step {
	return func(context.Context, agent.Request, func(agent.Delta)) (agent.Response, error) {
		return agent.Response{Message: agent.Message{Content: "ok"}, FinishReason: agent.FinishStop, Usage: u}, nil
	}
}

func TestCostAccumulates(t *testing.T) {
	t.Parallel()
	offPeak := func() time.Time { return time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) } // a Saturday
	u := agent.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CompletionTokens: 100_000, Reported: true}
	tests := []struct {
		name  string
		model string
		price *agent.Price
		usage agent.Usage
		want  float64
	}{
		// deepseek-flash off-peak: 0.6M miss × $0.15 + 0.4M hit × $0.003 + 0.1M out × $0.60.
		{"built-in DeepSeek price", "deepseek-flash", nil, u, 0.09 + 0.0012 + 0.06},
		{"behind a vendor prefix", "deepseek/deepseek-v4-pro", nil, u, 0.6*0.66 + 0.4*0.022 + 0.1*1.98},
		{"--price", "my-model", &agent.Price{In: 1, Cached: 0.5, Out: 2}, u, 0.6 + 0.2 + 0.2},
		{"the endpoint's own cost wins", "deepseek-flash", &agent.Price{In: 1, Out: 1}, withCost(u, 0.5), 0.5},
		{"no price, no cost", "my-model", nil, u, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := &agent.Loop{Provider: newReplay(t, usageStep(tt.usage), usageStep(tt.usage)), Price: tt.price, Now: offPeak, Model: tt.model}
			prev := agent.ContextUsage{}
			for turn := 1; turn <= 2; turn++ {
				out, err := l.Run(testutil.Context(t), agent.Turn{Caller: tools.Caller{SessionID: "s", Cwd: t.TempDir()}, Prompt: "hi", Usage: prev})
				if err != nil {
					t.Fatal(err)
				}
				got := out.Usage.Cost
				if tt.want < 0 {
					if got.Currency != "" {
						t.Errorf("cost = %+v, want none", got)
					}
					return
				}
				if got.Currency != "USD" || math.Abs(got.Amount-float64(turn)*tt.want) > 1e-9 {
					t.Errorf("turn %d: cumulative cost = %+v, want %v USD", turn, got, float64(turn)*tt.want)
				}
				if math.Abs(out.Cost.Amount-tt.want) > 1e-9 || out.Spent.CachedTokens != u.CachedTokens {
					t.Errorf("turn %d: turn cost %+v, spent %+v", turn, out.Cost, out.Spent)
				}
				if out.Usage.Used != u.PromptTokens+u.CompletionTokens {
					t.Errorf("used = %d, want the last request's prompt + completion", out.Usage.Used)
				}
				prev = out.Usage
			}
		})
	}
}

func withCost(u agent.Usage, c float64) agent.Usage {
	u.Cost = &c
	return u
}

func TestPeakHoursDoublePrice(t *testing.T) {
	t.Parallel()
	peak := func() time.Time { return time.Date(2026, 12, 2, 7, 30, 0, 0, time.UTC) } // Wednesday 07:30 UTC
	u := agent.Usage{PromptTokens: 1_000_000, CompletionTokens: 0, Reported: true}
	l := &agent.Loop{Provider: newReplay(t, usageStep(u)), Now: peak, Model: "deepseek-flash"}
	out, err := l.Run(testutil.Context(t), agent.Turn{Caller: tools.Caller{SessionID: "s", Cwd: t.TempDir()}, Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(out.Usage.Cost.Amount-0.30) > 1e-9 {
		t.Errorf("peak cost = %v, want 0.30", out.Usage.Cost.Amount)
	}
}

func TestParsePrice(t *testing.T) {
	t.Parallel()
	p, err := agent.ParsePrice("in=0.5, cached=0.05 ,out=1.5")
	if err != nil || p.In != 0.5 || p.Cached != 0.05 || p.Out != 1.5 {
		t.Errorf("ParsePrice = %+v, %v", p, err)
	}
	if p, err := agent.ParsePrice("in=1,out=2"); err != nil || p.Cached != 1 {
		t.Errorf("no cached = %+v, %v; want cached = in", p, err)
	}
	for _, bad := range []string{"", "in=1", "in=x,out=1", "in=-1,out=1", "in=1,out=2,foo=3", "1,2,3"} {
		if _, err := agent.ParsePrice(bad); err == nil {
			t.Errorf("ParsePrice(%q) accepted", bad)
		}
	}
}

func TestThinkingReachesTheRequest(t *testing.T) {
	t.Parallel()
	r := newReplay(t, say("ok"))
	l := &agent.Loop{Provider: r}
	if _, err := l.Run(testutil.Context(t), agent.Turn{Caller: tools.Caller{SessionID: "s", Cwd: t.TempDir()}, Prompt: "hi", Thinking: func() string { return "max" }}); err != nil {
		t.Fatal(err)
	}
	if got := r.requests()[0].Thinking; got != "max" {
		t.Errorf("request thinking = %q, want max", got)
	}
}

func TestImagesOnlyForModelsThatReadThem(t *testing.T) {
	t.Parallel()
	img := []agent.Image{{MimeType: "image/png", Data: "AAAA", Name: "a.png"}}
	for _, reads := range []bool{true, false} {
		r := newReplay(t, say("ok"))
		l := &agent.Loop{Provider: r}
		out, err := l.Run(testutil.Context(t), agent.Turn{Caller: tools.Caller{SessionID: "s", Cwd: t.TempDir()}, Prompt: "look", Images: img, ReadsImages: reads})
		if err != nil {
			t.Fatal(err)
		}
		sent := r.requests()[0].Messages[1]
		switch {
		case reads && (len(sent.Images) != 1 || sent.Content != "look"):
			t.Errorf("reads images: sent %+v", sent)
		case !reads && (len(sent.Images) != 0 || sent.Content != "look\n"+agent.ImageNote):
			t.Errorf("does not read images: sent %+v, want the note instead", sent)
		}
		// The history keeps the image either way: another model may read it.
		if len(out.Messages[0].Images) != 1 {
			t.Errorf("the prompt in the history lost its image: %+v", out.Messages[0])
		}
	}
}
