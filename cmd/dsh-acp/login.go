package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/signin"
)

const loginUsage = `Usage:
  dsh-acp login [--base-url URL]    ask for the endpoint's API key, check it, store it for that endpoint
  dsh-acp logout [--base-url URL]   remove the key stored for the endpoint

An endpoint is its base URL (scheme, host, port and path; a URL without a
path gets /v1), by default the one the agent uses: --base-url, DSH_BASE_URL,
config.toml's base-url, else https://api.deepseek.com/v1. The key is read on
the terminal without echo (or as one line from a pipe), checked with GET
/models at the endpoint, and stored for that endpoint only, in keys.json
(0600) in the user's config directory. A stored key is sent only to the
endpoint it was checked against, one key per endpoint. DSH_API_KEY and
DEEPSEEK_API_KEY, when set, win over it.

Flags:
`

// loginConfig is the configuration login and logout read: the server's
// flags (an editor's terminal sign-in runs the agent's own command line
// with "login" added), config.toml and the environment, so the endpoint is
// the one the agent uses.
func loginConfig(name string, args []string, getenv env, stdout, stderr io.Writer) (*config, int, bool) {
	cfg, err := readSettings(settings.Request{Name: name, Header: loginUsage, Args: args, Getenv: getenv, NoChecks: true}, func(rest []string) error {
		if len(rest) > 0 {
			return fmt.Errorf("unexpected argument %q: %s takes flags only", rest[0], strings.TrimPrefix(name, "dsh-acp "))
		}
		return nil
	})
	if err == nil {
		err = cfg.blame("base-url", checkBaseURL(cfg.baseURL))
	}
	var help *settings.HelpError
	if errors.As(err, &help) {
		// Only the flags that matter here; the rest are accepted (an
		// editor's sign-in passes its whole command line) and ignored.
		only := (&config{}).table().For("").FlagSet(name)
		err = &settings.HelpError{Text: settings.UsageOnly(loginUsage, only, "base-url") +
			"\nEvery other flag of dsh-acp is accepted too, and ignored: an editor's sign-in\nruns the agent's own command line with login added.\n"}
	}
	if code, done := settle(cfg, err, name, stdout, stderr); done {
		return nil, code, true
	}
	return cfg, 0, false
}

// runLogin is `dsh-acp login`: what an editor's terminal sign-in runs.
func runLogin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, code, done := loginConfig("dsh-acp login", args, getenv, stdout, stderr)
	if done {
		return code
	}
	return signin.Login(ctx, cfg.baseURL, cfg.model, stdin, stderr, getenv)
}

// runLogout is `dsh-acp logout`: the key stored for the endpoint is
// removed (and the endpoint-less key of an older dsh-acp, if any).
func runLogout(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, code, done := loginConfig("dsh-acp logout", args, getenv, stdout, stderr)
	if done {
		return code
	}
	msg, err := signin.Logout(getenv, cfg.baseURL)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp logout:", err)
		return 1
	}
	fmt.Fprintln(stderr, msg)
	return 0
}
