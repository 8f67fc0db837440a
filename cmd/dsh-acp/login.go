package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/executor"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/keystore"
	"github.com/dsh-acp/dsh-acp/internal/userdir"
)

// keyStore is where `dsh-acp login` keeps keys, one per endpoint: the
// user's config directory, and the OS keychain where one answers.
func keyStore(getenv env) (*keystore.Store, error) {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		return nil, err
	}
	return &keystore.Store{Dir: dir}, nil
}

// envKey is the key the environment gives and its variable's name: it
// is the user's own choice for this run, and goes to whatever endpoint
// the run uses.
func envKey(getenv env) (key, name string) {
	for _, name := range executor.DefaultLimits().CredentialEnv {
		if k := getenv(name); k != "" {
			return k, name
		}
	}
	return "", ""
}

// keyFrom is the model key for the endpoint baseURL names and where it
// came from, as a person reads it ("" with none): the environment's, else
// the one `dsh-acp login` stored for that endpoint. err says why a stored
// key cannot be read.
func keyFrom(getenv env, baseURL string) (key, from string, err error) {
	if k, name := envKey(getenv); k != "" {
		return k, "from the environment (" + name + ")", nil
	}
	endpoint, err := openai.Endpoint(baseURL)
	if err != nil {
		return "", "", err
	}
	st, err := keyStore(getenv)
	if err != nil {
		return "", "", err
	}
	k, err := st.Get(endpoint)
	if k == "" || err != nil {
		return "", "", err
	}
	return k, "stored by dsh-acp login for " + endpoint + " (" + st.Where(endpoint) + ")", nil
}

// lookupKey is the provider's key lookup (openai.Options.Key) for the
// endpoint baseURL names: the environment's key, read once at start, else
// the one stored for this endpoint, read at every request — a sign-in in
// the editor's terminal while the agent runs is used at once, and a key
// stored for another endpoint is never sent here. When there is none, its
// error says what is stored instead.
func lookupKey(getenv env, baseURL string) func() (string, error) {
	if getenv == nil {
		getenv = noEnvAt
	}
	if k, _ := envKey(getenv); k != "" {
		return func() (string, error) { return k, nil }
	}
	endpoint, epErr := openai.Endpoint(baseURL)
	st, stErr := keyStore(getenv)
	return func() (string, error) {
		if err := errors.Join(epErr, stErr); err != nil {
			return "", err
		}
		k, err := st.Get(endpoint)
		if k != "" || err != nil {
			return k, err
		}
		return "", noStoredKey(st, endpoint)
	}
}

// noStoredKey says, for an endpoint without a key, what is stored instead
// (nil: nothing): keys for other endpoints, which are not sent here, or the
// key of an older dsh-acp, which names no endpoint.
func noStoredKey(st *keystore.Store, endpoint string) error {
	var notes []string
	if others, err := st.Endpoints(); err == nil && len(others) > 0 {
		notes = append(notes, fmt.Sprintf("keys are stored for %s only, each sent only to its own endpoint", strings.Join(others, ", ")))
	}
	if k, err := st.Legacy(); err == nil && k != "" {
		notes = append(notes, fmt.Sprintf("the key an earlier dsh-acp stored in %s names no endpoint, so it is sent nowhere: dsh-acp login --base-url %s offers to check it there", st.LegacyPath(), endpoint))
	}
	if len(notes) == 0 {
		return nil
	}
	return errors.New(strings.Join(notes, "; "))
}

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
			"Every other flag of dsh-acp is accepted too, and ignored: an editor's sign-in\nruns the agent's own command line with login added.\n"}
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
	p, err := openai.New(openai.Options{BaseURL: cfg.baseURL, Model: cfg.model})
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 2
	}
	st, err := keyStore(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 1
	}
	// A key an older dsh-acp stored names no endpoint: it is offered here,
	// where the user names one, and checked there before it is kept.
	legacy, _ := st.Legacy()
	if legacy != "" {
		fmt.Fprintf(stderr, "An earlier dsh-acp stored a key without saying for which endpoint (%s).\nAPI key for %s (Enter: check that key there and keep it for %s): ", st.LegacyPath(), p.Endpoint(), p.Endpoint())
	} else {
		fmt.Fprintf(stderr, "API key for %s: ", p.Endpoint())
	}
	key, err := readKey(stdin)
	fmt.Fprintln(stderr)
	if key == "" && legacy != "" && err == nil {
		key = legacy
	} else if key == "" && err == nil {
		err = errors.New("no key given; nothing was stored")
	}
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 1
	}
	p.SetAPIKey(key)
	models, err := p.Models(ctx)
	if err != nil {
		if errors.Is(err, agent.ErrAuthRequired) {
			fmt.Fprintf(stderr, "dsh-acp login: %s refused this key; nothing was stored\n", p.Endpoint())
		} else {
			fmt.Fprintf(stderr, "dsh-acp login: could not check the key (nothing was stored): %v\n", err)
		}
		return 1
	}
	where, err := st.Put(p.Endpoint(), key)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 1
	}
	if key == legacy {
		if _, err := st.RemoveLegacy(); err != nil {
			fmt.Fprintln(stderr, "dsh-acp login:", err)
		}
	}
	fmt.Fprintf(stderr, "Signed in: %s serves %d models; the key is stored in %s and sent only to %s\n", p.Endpoint(), len(models), where, p.Endpoint())
	if k, _ := envKey(getenv); k != "" {
		fmt.Fprintln(stderr, "Note: DSH_API_KEY or DEEPSEEK_API_KEY is set and wins over the stored key.")
	}
	return 0
}

// readKey reads the key without echo from a terminal, else one line; ""
// when the line is empty.
func readKey(stdin io.Reader) (string, error) {
	var line string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		line = string(b)
	} else if stdin != nil {
		s, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the key: %w", err)
		}
		line = s
	}
	return strings.TrimSpace(line), nil
}

// runLogout is `dsh-acp logout`: the key stored for the endpoint is
// removed (and the endpoint-less key of an older dsh-acp, if any).
func runLogout(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg, code, done := loginConfig("dsh-acp logout", args, getenv, stdout, stderr)
	if done {
		return code
	}
	msg, err := logout(getenv, cfg.baseURL)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp logout:", err)
		return 1
	}
	fmt.Fprintln(stderr, msg)
	return 0
}

// logout removes the key stored for the endpoint baseURL names, and the
// older dsh-acp's key, which names none; msg says what it did.
func logout(getenv env, baseURL string) (msg string, err error) {
	endpoint, err := openai.Endpoint(baseURL)
	if err != nil {
		return "", err
	}
	st, err := keyStore(getenv)
	if err != nil {
		return "", err
	}
	where := st.Where(endpoint)
	removed, err := st.Remove(endpoint)
	if err != nil {
		return "", err
	}
	legacy, err := st.RemoveLegacy()
	if err != nil {
		return "", err
	}
	switch {
	case removed:
		msg = fmt.Sprintf("Signed out of %s: its key was removed from %s.", endpoint, where)
	default:
		msg = fmt.Sprintf("No key was stored for %s.", endpoint)
	}
	if legacy {
		msg += fmt.Sprintf(" Removed the key an earlier dsh-acp stored (%s).", st.LegacyPath())
	}
	if k, _ := envKey(getenv); k != "" {
		msg += " DSH_API_KEY or DEEPSEEK_API_KEY is still set, and is still used."
	}
	return msg, nil
}
