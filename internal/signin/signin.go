// Package signin is which API key goes to which model endpoint: the
// environment's, else the one dsh-acp login checked and stored for that
// endpoint (never another's); and login and logout themselves.
package signin

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
	"github.com/dsh-acp/dsh-acp/internal/keystore"
	"github.com/dsh-acp/dsh-acp/internal/userdir"
)

// Store is where `dsh-acp login` keeps keys, one per endpoint: the
// user's config directory, and the OS keychain where one answers.
func Store(getenv func(string) string) (*keystore.Store, error) {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		return nil, err
	}
	return &keystore.Store{Dir: dir}, nil
}

// EnvKey is the key the environment gives and its variable's name: it
// is the user's own choice for this run, and goes to whatever endpoint
// the run uses.
func EnvKey(getenv func(string) string) (key, name string) {
	for _, name := range executor.DefaultLimits().CredentialEnv {
		if k := getenv(name); k != "" {
			return k, name
		}
	}
	return "", ""
}

// From is the model key for the endpoint baseURL names and where it
// came from, as a person reads it ("" with none): the environment's, else
// the one `dsh-acp login` stored for that endpoint. err says why a stored
// key cannot be read.
func From(getenv func(string) string, baseURL string) (key, from string, err error) {
	if k, name := EnvKey(getenv); k != "" {
		return k, "from the environment (" + name + ")", nil
	}
	endpoint, err := openai.Endpoint(baseURL)
	if err != nil {
		return "", "", err
	}
	st, err := Store(getenv)
	if err != nil {
		return "", "", err
	}
	k, err := st.Get(endpoint)
	if k == "" || err != nil {
		return "", "", err
	}
	return k, "stored by dsh-acp login for " + endpoint + " (" + st.Where(endpoint) + ")", nil
}

// Lookup is the provider's key lookup (openai.Options.Key) for the
// endpoint baseURL names: the environment's key, read once at start, else
// the one stored for this endpoint, read at every request — a sign-in in
// the editor's terminal while the agent runs is used at once, and a key
// stored for another endpoint is never sent here. When there is none, its
// error says what is stored instead.
func Lookup(getenv func(string) string, baseURL string) func() (string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if k, _ := EnvKey(getenv); k != "" {
		return func() (string, error) { return k, nil }
	}
	endpoint, epErr := openai.Endpoint(baseURL)
	st, stErr := Store(getenv)
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

// Login is `dsh-acp login` for the endpoint baseURL names, once its flags
// are read: what an editor's terminal sign-in runs. It asks for the key on
// stderr, reads it from stdin, checks it with the endpoint and stores it
// for that endpoint; it returns the exit code.
func Login(ctx context.Context, baseURL, model string, stdin io.Reader, stderr io.Writer, getenv func(string) string) int {
	p, err := openai.New(openai.Options{BaseURL: baseURL, Model: model})
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 2
	}
	st, err := Store(getenv)
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
	if k, _ := EnvKey(getenv); k != "" {
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

// Logout removes the key stored for the endpoint baseURL names, and the
// older dsh-acp's key, which names none; msg says what it did.
func Logout(getenv func(string) string, baseURL string) (msg string, err error) {
	endpoint, err := openai.Endpoint(baseURL)
	if err != nil {
		return "", err
	}
	st, err := Store(getenv)
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
	if k, _ := EnvKey(getenv); k != "" {
		msg += " DSH_API_KEY or DEEPSEEK_API_KEY is still set, and is still used."
	}
	return msg, nil
}

// Origin says where the API key for the endpoint baseURL names would come
// from, never its value: the environment first, as the agent reads it,
// then the key dsh-acp login stored for that endpoint.
func Origin(getenv func(string) string, baseURL string) string {
	_, from, err := From(getenv, baseURL)
	switch {
	case err != nil:
		return "not usable: " + err.Error()
	case from == "":
		if _, why := Lookup(getenv, baseURL)(); why != nil {
			return "not set for this endpoint (" + why.Error() + ")"
		}
		return "not set"
	}
	return "set, " + from
}
