package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/term"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/userdir"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// keyFileName is the stored key's file in the user's config directory.
const keyFileName = "api-key"

// keyFile is where `dsh-acp login` stores the key.
func keyFile(getenv env) (string, error) {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, keyFileName), nil
}

// apiKey is the model key, in this order: DSH_API_KEY, DEEPSEEK_API_KEY,
// the key `dsh-acp login` stored. A stored key that cannot be read counts
// as none (the prompt then asks for a sign-in).
func apiKey(getenv env) string {
	k, _, _ := keyFrom(getenv)
	return k
}

// keyFrom is the model key and where it came from, as a person reads it
// ("" with none); err says why a stored key cannot be read.
func keyFrom(getenv env) (key, from string, err error) {
	for _, name := range executor.DefaultLimits().CredentialEnv {
		if k := getenv(name); k != "" {
			return k, "from the environment (" + name + ")", nil
		}
	}
	k, err := storedKey(getenv)
	if k == "" || err != nil {
		return "", "", err
	}
	path, _ := keyFile(getenv)
	return k, "stored by dsh-acp login (" + path + ")", nil
}

// storedKey reads the stored key; "" with no error when there is none.
func storedKey(getenv env) (string, error) {
	path, err := keyFile(getenv)
	if err != nil {
		return "", err
	}
	b, err := untrusted.ReadWhole(path, 0, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the stored key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// storeKey writes key 0600 (its directory 0700), replacing any other in
// one rename, so a reader never sees half a key.
func storeKey(getenv env, key string) (string, error) {
	path, err := keyFile(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("store the key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".api-key-*")
	if err != nil {
		return "", fmt.Errorf("store the key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store the key: %w", err)
	}
	if _, err := io.WriteString(tmp, key+"\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("store the key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("store the key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("store the key: %w", err)
	}
	return path, nil
}

const loginUsage = `Usage:
  dsh-acp login [--base-url URL]   ask for the model endpoint's API key, check it, store it
  dsh-acp logout                   remove the stored key

The key is read on the terminal without echo (or as one line from a pipe),
checked with GET /models at the endpoint, and stored 0600 in the user's
config directory. DSH_API_KEY and DEEPSEEK_API_KEY, when set, win over it.

Flags:
`

// runLogin is `dsh-acp login`: what an editor's terminal sign-in runs.
func runLogin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	cfg := &config{getenv: getenv}
	// The endpoint may be set in config.toml, as for the server.
	l, err := layer(func(cfg *config, getenv env) *flag.FlagSet { return newFlagSet("dsh-acp login", cfg, getenv) }, cfg, getenv)
	var rest []string
	if err == nil {
		rest, err = parseFlags(l.fs, loginUsage, args)
	}
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q: login takes flags only", rest[0])
	}
	if code, done := settle(cfg, err, "dsh-acp login", stdout, stderr); done {
		return code
	}
	p, err := openai.New(openai.Options{BaseURL: cfg.baseURL, Model: cfg.model})
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 2
	}
	fmt.Fprintf(stderr, "API key for %s: ", p.Endpoint())
	key, err := readKey(stdin)
	fmt.Fprintln(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 1
	}
	p.SetAPIKey(key)
	models, err := p.Models(ctx)
	if err != nil {
		if errors.Is(err, agent.ErrProvider) && strings.Contains(err.Error(), "401") {
			fmt.Fprintf(stderr, "dsh-acp login: %s refused this key; nothing was stored\n", p.Endpoint())
		} else {
			fmt.Fprintf(stderr, "dsh-acp login: could not check the key (nothing was stored): %v\n", err)
		}
		return 1
	}
	path, err := storeKey(env(getenv), key)
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp login:", err)
		return 1
	}
	fmt.Fprintf(stderr, "Signed in: %s serves %d models; the key is stored in %s\n", p.Endpoint(), len(models), path)
	if env(getenv).first(executor.DefaultLimits().CredentialEnv...) != "" {
		fmt.Fprintln(stderr, "Note: DSH_API_KEY or DEEPSEEK_API_KEY is set and wins over the stored key.")
	}
	return 0
}

// readKey reads the key without echo from a terminal, else one line.
func readKey(stdin io.Reader) (string, error) {
	var line string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		line = string(b)
	} else {
		s, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the key: %w", err)
		}
		line = s
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return "", errors.New("no key given; nothing was stored")
	}
	return key, nil
}

// logoutArgs drops the serve flags an editor's command line puts before
// "logout": logout takes none of them, and removes the one stored key.
func logoutArgs(args []string) []string {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return nil
	}
	return args
}

// runLogout is `dsh-acp logout`: the stored key is removed.
func runLogout(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, getenv env) int {
	args = logoutArgs(args)
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stdout, loginUsage)
			return 0
		}
		fmt.Fprintf(stderr, "dsh-acp logout: unexpected argument %q\n", args[0])
		return 2
	}
	path, err := keyFile(env(getenv))
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp logout:", err)
		return 1
	}
	switch err := os.Remove(path); {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(stderr, "No key was stored.")
	case err != nil:
		fmt.Fprintln(stderr, "dsh-acp logout:", err)
		return 1
	default:
		fmt.Fprintf(stderr, "Signed out: removed %s\n", path)
	}
	return 0
}
