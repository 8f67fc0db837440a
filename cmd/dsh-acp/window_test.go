package main

import "testing"

func TestWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 128_000}, // deepseek-chat, the default model
		{[]string{"--model", "deepseek-reasoner"}, 128_000},
		{[]string{"--model", "some-local-model"}, 128_000},
		{[]string{"--model", "deepseek-chat", "--context-window", "64000"}, 64_000},
	} {
		cfg, err := parseServe(c.args, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.window(); got != c.want {
			t.Errorf("%v: window %d, want %d", c.args, got, c.want)
		}
	}
	cfg, err := parseServe(nil, noEnv)
	if err != nil || cfg.compactAt != 0.8 {
		t.Errorf("default --compact-at = %v (%v), want 0.8", cfg.compactAt, err)
	}
}
