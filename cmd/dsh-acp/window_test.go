package main

import "testing"

func TestWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 1_000_000}, // deepseek-flash, the default model
		{[]string{"--model", "deepseek-v4-pro"}, 1_000_000},
		{[]string{"--model", "deepseek/deepseek-v4-flash"}, 1_000_000},
		{[]string{"--model", "deepseek-reasoner"}, 128_000}, // retired: unknown
		{[]string{"--model", "some-local-model"}, 128_000},
		{[]string{"--model", "deepseek-flash", "--context-window", "64000"}, 64_000},
	} {
		cfg, err := parseServe(c.args, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.window(); got != c.want {
			t.Errorf("%v: window %d, want %d", c.args, got, c.want)
		}
	}
	for _, bad := range [][]string{{"--thinking", "extreme"}, {"--price", "in=1"}, {"--price", "in=a,out=1"}} {
		if _, err := parseServe(bad, noEnv); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	cfg, err := parseServe([]string{"--thinking", "max", "--price", "in=1,cached=0.1,out=2"}, noEnv)
	if err != nil || cfg.thinking != "max" || cfg.prices == nil || cfg.prices.Cached != 0.1 {
		t.Errorf("--thinking max --price = %+v, %v", cfg, err)
	}
	cfg, err = parseServe(nil, noEnv)
	if err != nil || cfg.compactAt != 0.8 {
		t.Errorf("default --compact-at = %v (%v), want 0.8", cfg.compactAt, err)
	}
}
