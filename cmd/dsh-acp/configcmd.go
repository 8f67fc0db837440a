package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

const configUsage = `Usage:
  dsh-acp config [flags]

Prints every setting's effective value and where it came from: a flag,
the environment, the config file (with its line) or the default. Flags
given here count as they would for dsh-acp exec. The API key's value is
never printed, only where it was found.

Every flag of dsh-acp and dsh-acp exec can be set in config.toml under
its long name (model = "deepseek-flash", allow = ["git status"], …), except
version, resume, continue and cwd. Precedence: flag > environment > config
file > default; repeatable flags (allow, deny, …) add to the file's list.

Flags:
`

func runConfig(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, err := readSettings(settings.Request{Command: execCommand, Name: "dsh-acp config", Header: configUsage, Footer: usageFooter, Args: args, Getenv: getenv, NoChecks: true}, func(rest []string) error {
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
	switch {
	case p.File.Path == "":
		fmt.Fprintln(w, "config file: none (no HOME or XDG_CONFIG_HOME to find it by)")
	case p.File.Found:
		fmt.Fprintf(w, "config file: %s\n", p.File.Path)
	default:
		fmt.Fprintf(w, "config file: %s (not there; every setting below is a flag, the environment or a default)\n", p.File.Path)
	}
	baseURL := ""
	if f := p.Flags.Lookup("base-url"); f != nil {
		baseURL = f.Value.String()
	}
	fmt.Fprintf(w, "api key: %s\n\n", keyOrigin(getenv, baseURL))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	p.Flags.VisitAll(func(f *flag.Flag) {
		if p.Setting(f.Name).OneRun {
			return
		}
		v := shown(f)
		if d, ok := defaults[f.Name]; ok && (f.Value.String() == "" || f.Value.String() == "0") {
			v = d
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, v, p.Source(f.Name))
	})
	tw.Flush()
}

// keyOrigin says where the API key for the endpoint baseURL names would
// come from, never its value: the environment first, as the agent reads
// it, then the key dsh-acp login stored for that endpoint.
func keyOrigin(getenv env, baseURL string) string {
	_, from, err := keyFrom(getenv, baseURL)
	switch {
	case err != nil:
		return "not usable: " + err.Error()
	case from == "":
		if _, why := lookupKey(getenv, baseURL)(); why != nil {
			return "not set for this endpoint (" + why.Error() + ")"
		}
		return "not set"
	}
	return "set, " + from
}

// shown is a value as a person reads it.
func shown(f *flag.Flag) string {
	v := f.Value.String()
	if v == "" {
		return `""`
	}
	if strings.ContainsAny(v, " \t") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
