package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent/openai"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/keystore"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/signin"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// userEnv is an environment whose config directory is a fresh temp dir;
// path is the stored keys' index there.
func userEnv(t *testing.T, extra ...string) (env, string) {
	t.Helper()
	home := t.TempDir()
	vals := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}
	for i := 0; i+1 < len(extra); i += 2 {
		vals[extra[i]] = extra[i+1]
	}
	return func(k string) string { return vals[k] }, filepath.Join(home, "config", "dsh-acp", keystore.FileName)
}

// storedFor is the key a run against baseURL uses.
func storedFor(t *testing.T, getenv env, baseURL string) string {
	t.Helper()
	k, err := signin.Lookup(getenv, baseURL)()
	if err != nil && k != "" {
		t.Fatal(err)
	}
	return k
}

func TestLoginChecksAndStoresTheKey(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Key: "sk-good-0123456789"})
	getenv, path := userEnv(t)
	ctx := testutil.Context(t)
	login := func(key string) (int, string) {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"login", "--base-url", m.URL}, strings.NewReader(key+"\n"), &out, &errb, getenv)
		if out.Len() > 0 {
			t.Errorf("login wrote to stdout: %q", out.String())
		}
		return code, errb.String()
	}
	if code, msg := login("sk-bad-0123456789"); code != 1 || !strings.Contains(msg, "refused this key") {
		t.Errorf("a wrong key: exit %d, %q", code, msg)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused key was stored (%v)", err)
	}
	if code, msg := login(""); code != 1 || !strings.Contains(msg, "no key given") {
		t.Errorf("no key: exit %d, %q", code, msg)
	}
	// As an editor's terminal sign-in runs it: the agent's flags, then
	// login (also after "serve").
	for _, args := range [][]string{{"--base-url", m.URL, "--allow", "git status", "login"}, {"serve", "--base-url", m.URL, "login"}} {
		var out, errb bytes.Buffer
		if code := run(ctx, args, strings.NewReader("sk-bad-0123456789\n"), &out, &errb, getenv); code != 1 || !strings.Contains(errb.String(), "refused this key") {
			t.Errorf("%q: exit %d, %q", args, code, errb.String())
		}
	}
	if code, msg := login("sk-good-0123456789"); code != 0 || !strings.Contains(msg, "Signed in") || !strings.Contains(msg, "sent only to "+m.URL) || strings.Contains(msg, "sk-good") {
		t.Fatalf("the right key: exit %d, %q", code, msg)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stored keys %v, %v; want mode 0600", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("config dir %v, %v; want 0700", di, err)
	}
	if got := storedFor(t, getenv, m.URL); got != "sk-good-0123456789" {
		t.Errorf("key for %s = %q, want the stored one", m.URL, got)
	}
	// The same endpoint spelt otherwise is the same endpoint; another path
	// is not.
	if got := storedFor(t, getenv, strings.TrimSuffix(m.URL, "/v1")); got != "sk-good-0123456789" {
		t.Errorf("key for %s without /v1 = %q", m.URL, got)
	}
	if got := storedFor(t, getenv, m.URL+"/other"); got != "" {
		t.Errorf("another path got the key: %q", got)
	}
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"logout", "--base-url", m.URL}, nil, &out, &errb, getenv); code != 0 || !strings.Contains(errb.String(), "Signed out of "+m.URL) {
		t.Errorf("logout: exit %d, %q", code, errb.String())
	}
	if got := storedFor(t, getenv, m.URL); got != "" {
		t.Errorf("the key is still there after logout: %q", got)
	}
}

func TestKeyOrder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"DSH_API_KEY", "a", "DEEPSEEK_API_KEY", "b"}, "a"},
		{[]string{"DEEPSEEK_API_KEY", "b"}, "b"},
		{nil, "stored"},
	} {
		getenv, _ := userEnv(t, tt.env...)
		st, err := signin.Store(getenv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(openai.DefaultBaseURL+"/v1", "stored"); err != nil {
			t.Fatal(err)
		}
		if got := storedFor(t, getenv, ""); got != tt.want {
			t.Errorf("env %v: key %q, want %q", tt.env, got, tt.want)
		}
	}
}

// homeEnv is the environment of the binary run with home as its HOME.
func homeEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
}

// runBinary runs the real binary with stdin and returns its exit code and
// what it wrote (stdout and stderr together).
func runBinary(t *testing.T, home, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = homeEnv(home)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// execAt runs a prompt headless against baseURL.
func execAt(t *testing.T, home, baseURL string) (int, string) {
	t.Helper()
	return runBinary(t, home, "", "exec", "--no-persist", "--base-url", baseURL, "--cwd", t.TempDir(), "say hi")
}

// TestKeysStayWithTheirEndpoint, over the real binary: an OpenRouter key
// stored by login --base-url A is sent to A and never to B, another
// endpoint (both mocks on 127.0.0.1, which need no key: a key sent to B
// would be a leak, not a need); a key stored for B later goes to B only;
// logout --base-url A removes A's alone. A key an older dsh-acp stored
// (no endpoint recorded) is sent nowhere, and login offers to check it at
// the endpoint the user names.
func TestKeysStayWithTheirEndpoint(t *testing.T) {
	t.Parallel()
	const keyA, keyB = "sk-or-v1-0123456789abcdef0123456789abcdef", "sk-0123456789abcdef0123456789abcdef"
	a := mockllm.New(t, mockllm.Options{Flavor: mockllm.OpenRouter, Key: keyA, Models: []string{"deepseek-flash"}})
	b := mockllm.New(t, mockllm.Options{})
	home := t.TempDir()
	if code, msg := runBinary(t, home, keyA+"\n", "login", "--base-url", a.URL); code != 0 {
		t.Fatalf("login to A: exit %d: %s", code, msg)
	}
	if code, out := execAt(t, home, a.URL); code != 0 {
		t.Fatalf("exec against A: exit %d: %s", code, out)
	}
	if code, out := execAt(t, home, b.URL); code != 0 || strings.Contains(out, keyA) {
		t.Fatalf("exec against B: exit %d: %s", code, out)
	}
	if len(b.Requests()) == 0 {
		t.Fatal("B was never asked")
	}
	for _, h := range b.Auths() {
		if h != "" {
			t.Fatalf("B was sent %q; it has no key of its own", h)
		}
	}
	if got := a.Auths(); len(got) < 2 || got[len(got)-1] != "Bearer "+keyA {
		t.Errorf("A's requests carried %q, want its key", got)
	}

	// B's own key goes to B, A's still to A.
	if code, msg := runBinary(t, home, keyB+"\n", "login", "--base-url", b.URL); code != 0 {
		t.Fatalf("login to B: exit %d: %s", code, msg)
	}
	nA, nB := len(a.Auths()), len(b.Auths())
	execAt(t, home, a.URL)
	execAt(t, home, b.URL)
	for _, h := range a.Auths()[nA:] {
		if h != "Bearer "+keyA {
			t.Errorf("A was sent %q", h)
		}
	}
	for _, h := range b.Auths()[nB:] {
		if h != "Bearer "+keyB {
			t.Errorf("B was sent %q", h)
		}
	}

	// Logout removes the one named.
	getenv := env(func(k string) string {
		return map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}[k]
	})
	if code, msg := runBinary(t, home, "", "logout", "--base-url", a.URL); code != 0 || !strings.Contains(msg, "Signed out of "+a.URL) {
		t.Fatalf("logout A: exit %d: %s", code, msg)
	}
	if storedFor(t, getenv, a.URL) != "" || storedFor(t, getenv, b.URL) != keyB {
		t.Errorf("after logout of A: A %q, B %q", storedFor(t, getenv, a.URL), storedFor(t, getenv, b.URL))
	}

	// The older single key: sent to no endpoint.
	st, err := signin.Store(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.LegacyPath(), []byte(keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nA = len(a.Auths())
	code, msg := execAt(t, home, a.URL)
	if code == 0 || !strings.Contains(msg, "names no endpoint") || !strings.Contains(msg, "dsh-acp login --base-url "+a.URL) || strings.Contains(msg, keyA) {
		t.Errorf("exec with only the older key: exit %d: %s", code, msg)
	}
	for _, h := range a.Auths()[nA:] {
		if h != "" {
			t.Errorf("the older key was sent: %q", h)
		}
	}
	// login offers it: Enter checks it at the endpoint named and keeps it
	// there, and the older file goes.
	if code, msg := runBinary(t, home, "\n", "login", "--base-url", a.URL); code != 0 || !strings.Contains(msg, "earlier dsh-acp") {
		t.Fatalf("login taking up the older key: exit %d: %s", code, msg)
	}
	if storedFor(t, getenv, a.URL) != keyA {
		t.Error("the older key was not stored for A")
	}
	if _, err := os.Stat(st.LegacyPath()); !os.IsNotExist(err) {
		t.Errorf("the older key file is still there (%v)", err)
	}
}

// The commands that take a setting or two read them from config.toml too:
// login checks the key at the file's base-url, sessions and rules read the
// file's state-dir, where the agent stores.
func TestSubcommandsReadConfigFile(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Key: "sk-good"})
	getenv, keyPath := userEnv(t)
	state := t.TempDir()
	conf := "base-url = " + strconv.Quote(m.URL) + "\nstate-dir = " + strconv.Quote(state) + "\n"
	if err := os.MkdirAll(filepath.Dir(keyPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(keyPath), settings.FileName), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"login"}, strings.NewReader("sk-good\n"), &out, &errb, getenv); code != 0 || !strings.Contains(errb.String(), m.URL) {
		t.Errorf("login with the file's base-url: exit %d, %q", code, errb.String())
	}
	for _, cmd := range []string{"sessions", "rules"} {
		out.Reset()
		errb.Reset()
		code := run(ctx, []string{cmd}, nil, &out, &errb, getenv)
		if code != 0 || !strings.Contains(out.String()+errb.String(), state) {
			t.Errorf("%s: exit %d, does not name the file's state-dir %s: %q %q", cmd, code, state, out.String(), errb.String())
		}
	}
}

// TestStoredKeyWithheldFromCommands: a variable that holds the key stored
// for the endpoint (under a name that does not look like a credential) is
// not in a command's environment, as one holding the environment's key is
// not.
func TestStoredKeyWithheldFromCommands(t *testing.T) {
	t.Parallel()
	const key = "sk-stored-0123456789abcdef"
	home := t.TempDir()
	getenv := env(func(k string) string {
		return map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}[k]
	})
	st, err := signin.Store(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(openai.DefaultBaseURL+"/v1", key); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, bashCall("", `echo "plain=[$PLAIN_VALUE] other=[$OTHER_VALUE]"`), `{"text":"Done."}`)
	cmd := exec.Command(binPath, "exec", "--no-persist", "--script", script, "--yes", "--cwd", t.TempDir(), "look")
	cmd.Env = append(homeEnv(home), "PLAIN_VALUE=prefix-"+key, "OTHER_VALUE=visible")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "plain=[] other=[visible]") {
		t.Errorf("the command's environment, as it printed it:\n%s", out)
	}
}
