package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestExecModelTimeout: exec against an endpoint that accepts the request
// and never answers ends with an error naming the endpoint, within the
// --model-timeout, instead of hanging.
func TestExecModelTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	var out, errb bytes.Buffer
	code := run(ctx, []string{"exec", "--base-url", srv.URL + "/v1", "--model-timeout", "200ms", "--cwd", t.TempDir(), "hello"}, nil, &out, &errb, noEnv)
	all := out.String() + errb.String()
	if code == 0 {
		t.Errorf("exit 0 after a model timeout\n%s", all)
	}
	for _, want := range []string{srv.URL + "/v1", "sent no answer for 200ms", "--model-timeout"} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q\n--- output:\n%s", want, all)
		}
	}
	if strings.Contains(all, "waiting for the model") {
		t.Errorf("waiting notice printed on a stderr that is not a terminal:\n%s", all)
	}
}

func TestModelTimeoutFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe([]string{"--model-timeout", "5s"}, noEnv)
	if err != nil || cfg.modelTimeout != 5*time.Second {
		t.Fatalf("parseServe = %+v, %v", cfg, err)
	}
	cfg, err = parseServe(nil, noEnv)
	if err != nil || cfg.modelTimeout != time.Minute {
		t.Fatalf("default: %+v, %v", cfg, err)
	}
	if _, err := parseServe([]string{"--model-timeout", "0s"}, noEnv); err == nil {
		t.Error("--model-timeout 0s accepted")
	}
}
