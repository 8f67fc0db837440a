package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/signin"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

func runConfig(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, err := readSettings(settings.Request{Command: execCommand, Name: "dsh-acp config", Header: settings.CommandUsage, Footer: usageFooter, Args: args, Getenv: getenv, NoChecks: true}, func(rest []string) error {
		if len(rest) > 0 {
			return fmt.Errorf("unexpected argument %q: config takes flags only", rest[0])
		}
		return nil
	})
	var help *settings.HelpError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "dsh-acp config:", err)
		return 2
	}
	printConfig(stdout, cfg.settings, getenv, defaultsOf(cfg, getenv))
	return 0
}

// defaultsOf is what the flags left empty mean in effect, so that config
// shows the endpoint, model and store a run would use rather than "".
func defaultsOf(cfg *config, getenv env) map[string]string {
	model := modelName(cfg)
	thinking := "none (this model is not DeepSeek's)"
	if agent.IsDeepSeek(model) {
		thinking = agent.ThinkingHigh
	}
	images := "off"
	if agent.ReadsImages(model) {
		images = "on"
	}
	price := "none: no cost is shown (the endpoint sends none)"
	if agent.IsDeepSeek(model) {
		price = "DeepSeek's own prices for its models"
	}
	d := map[string]string{
		"base-url":       openai.DefaultBaseURL,
		"model":          model,
		"executor":       "local",
		"context-window": strconv.Itoa(cfg.window()),
		"thinking":       thinking,
		"images":         images,
		"price":          price,
		// What an empty value means, in the README's words: never "".
		"allow":          "none",
		"deny":           "none",
		"keep-env":       "none",
		"sandbox-read":   "none: everything but the agent's files",
		"docker-read":    "none",
		"docker-image":   "none (needed with --executor docker)",
		"docker-network": "the engine's default",
		"docker-helper":  "this binary if it is static, else dsh-acp-helper beside it",
		"log-file":       "none: logs go to stderr",
		"log-level":      "warn on stderr, info with --log-file; exec logs nothing unless asked",
		"mcp-config":     "none",
		"sandbox":        "on where the kernel can confine commands",
		"script":         "none: a real model",
		"script-record":  "none",
	}
	if dir, err := store.DefaultDirFor(runtime.GOOS, getenv); err == nil {
		d["state-dir"] = dir
	}
	return d
}

func printConfig(w io.Writer, p *settings.Parsed, getenv env, defaults map[string]string) {
	p.File.Describe(w)
	baseURL := ""
	if f := p.Flags.Lookup("base-url"); f != nil {
		baseURL = f.Value.String()
	}
	fmt.Fprintf(w, "api key: %s\n\n", signin.Origin(getenv, baseURL))
	p.Print(w, defaults)
}
