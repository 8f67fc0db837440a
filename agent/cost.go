package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Price is a model's list price in USD per million tokens.
type Price struct {
	// In is a prompt token the endpoint did not have cached (a cache miss).
	In float64
	// Cached is a prompt token served from the endpoint's cache (a hit).
	Cached float64
	// Out is a completion token, reasoning included.
	Out float64
	// Peak, when set, is the price inside DeepSeek's peak hours (see
	// isPeak); the fields above are then the off-peak price.
	Peak *Price
}

// DeepSeek's prices as its "Models & Pricing" page
// (https://api-docs.deepseek.com/quick_start/pricing) listed them when read
// on 2026-12-01, in USD per million tokens. Off-peak rates are half the peak
// rates; peak hours are 01:00-04:00 and 06:00-10:00 UTC, Monday to Friday
// (the page also exempts Chinese public holidays, which we do not track: on
// those days we overstate). deepseek-v4-flash is billed as deepseek-flash.
var (
	deepSeekFlashPrice = Price{In: 0.15, Cached: 0.003, Out: 0.60, Peak: &Price{In: 0.30, Cached: 0.006, Out: 1.20}}
	deepSeekProPrice   = Price{In: 0.66, Cached: 0.022, Out: 1.98, Peak: &Price{In: 1.32, Cached: 0.044, Out: 3.96}}
)

// isPeak reports whether t is inside DeepSeek's peak hours.
func isPeak(t time.Time) bool {
	t = t.UTC()
	if d := t.Weekday(); d == time.Saturday || d == time.Sunday {
		return false
	}
	h := t.Hour()
	return (h >= 1 && h < 4) || (h >= 6 && h < 10)
}

// KnownPrice is the built-in price of model, if we have one.
func KnownPrice(model string) (Price, bool) {
	p := knownModels[ModelID(model)].price
	if p == nil {
		return Price{}, false
	}
	return *p, true
}

// ParsePrice reads --price: "in=<USD>,cached=<USD>,out=<USD>" per million
// tokens; cached may be left out (then it costs as much as in).
func ParsePrice(s string) (Price, error) {
	var p Price
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Price{}, fmt.Errorf("price %q: want in=<USD>,cached=<USD>,out=<USD> (per million tokens)", s)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		// NaN and infinities parse, but price nothing: refused as any
		// other word would be.
		if err != nil || !(f >= 0) || math.IsInf(f, 0) {
			return Price{}, fmt.Errorf("price %q: %s=%q is not a non-negative number", s, k, v)
		}
		switch k = strings.TrimSpace(k); k {
		case "in":
			p.In = f
		case "cached":
			p.Cached = f
		case "out":
			p.Out = f
		default:
			return Price{}, fmt.Errorf("price %q: unknown part %q (want in, cached, out)", s, k)
		}
		seen[k] = true
	}
	if !seen["in"] || !seen["out"] {
		return Price{}, fmt.Errorf("price %q: in= and out= are needed", s)
	}
	if !seen["cached"] {
		p.Cached = p.In
	}
	return p, nil
}

// Cost is an amount of money.
type Cost struct {
	Amount float64
	// Currency is an ISO 4217 code; empty means no cost is known.
	Currency string
}

// costOf is what one request cost: the endpoint's own figure when it sent
// one, else u priced at price at time at; ok is false when neither is
// known.
func costOf(u Usage, price *Price, at time.Time) (Cost, bool) {
	if u.Cost != nil {
		return Cost{Amount: *u.Cost, Currency: "USD"}, true
	}
	if price == nil || !u.Reported {
		return Cost{}, false
	}
	p := *price
	if p.Peak != nil && isPeak(at) {
		p = *p.Peak
	}
	cached := min(u.CachedTokens, u.PromptTokens)
	amount := (float64(u.PromptTokens-cached)*p.In + float64(cached)*p.Cached + float64(u.CompletionTokens)*p.Out) / 1e6
	return Cost{Amount: amount, Currency: "USD"}, true
}
