package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// userEnv is an environment whose config directory is a fresh temp dir.
func userEnv(t *testing.T, extra ...string) (env, string) {
	t.Helper()
	home := t.TempDir()
	vals := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}
	for i := 0; i+1 < len(extra); i += 2 {
		vals[extra[i]] = extra[i+1]
	}
	return func(k string) string { return vals[k] }, filepath.Join(home, "config", "dsh-acp", keyFileName)
}

func TestLoginChecksAndStoresTheKey(t *testing.T) {
	t.Parallel()
	m := mockllm.New(t, mockllm.Options{Key: "sk-good"})
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
	if code, msg := login("sk-bad"); code != 1 || !strings.Contains(msg, "refused this key") {
		t.Errorf("a wrong key: exit %d, %q", code, msg)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused key was stored (%v)", err)
	}
	if code, msg := login(""); code != 1 || !strings.Contains(msg, "no key given") {
		t.Errorf("no key: exit %d, %q", code, msg)
	}
	// As an editor's terminal sign-in runs it: the agent's flags, then login.
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"--base-url", m.URL, "--allow", "git status", "login"}, strings.NewReader("sk-bad\n"), &out, &errb, getenv); code != 1 || !strings.Contains(errb.String(), "refused this key") {
		t.Errorf("flags before login: exit %d, %q", code, errb.String())
	}
	if code, msg := login("sk-good"); code != 0 || !strings.Contains(msg, "Signed in") || strings.Contains(msg, "sk-good") {
		t.Fatalf("the right key: exit %d, %q", code, msg)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stored key %v, %v; want mode 0600", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("config dir %v, %v; want 0700", di, err)
	}
	if got := apiKey(getenv); got != "sk-good" {
		t.Errorf("apiKey = %q, want the stored one", got)
	}
	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"logout"}, nil, &out, &errb, getenv); code != 0 || !strings.Contains(errb.String(), "Signed out") {
		t.Errorf("logout: exit %d, %q", code, errb.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the key is still there after logout (%v)", err)
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
		if _, err := storeKey(getenv, "stored"); err != nil {
			t.Fatal(err)
		}
		if got := apiKey(getenv); got != tt.want {
			t.Errorf("env %v: key %q, want %q", tt.env, got, tt.want)
		}
	}
}

// Over the real binary: authMethods offers the terminal sign-in; with no
// key a prompt is auth_required (-32000); after the sign-in stored one,
// authenticate succeeds.
func TestSignInOverTheProtocol(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	home := t.TempDir()
	cmd := exec.Command(binPath, "--no-persist")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	p := startCmd(t, cmd)
	init := p.call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	methods, _ := init["authMethods"].([]any)
	if len(methods) != 1 {
		t.Fatalf("authMethods = %v, want the terminal sign-in", init["authMethods"])
	}
	m := methods[0].(map[string]any)
	if m["type"] != "terminal" || m["id"] != "dsh-acp-login" || len(m["args"].([]any)) != 1 || m["args"].([]any)[0] != "login" {
		t.Errorf("auth method %v", m)
	}
	sess := p.call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	sid := sess["sessionId"].(string)
	errorOf := func(method string, params any) map[string]any {
		id := p.send(method, params)
		r := p.await(ctx, method+" answer", func(m map[string]any) bool {
			f, ok := m["id"].(float64)
			return ok && int(f) == id && m["method"] == nil
		})
		e, _ := r["error"].(map[string]any)
		return e
	}
	e := errorOf("session/prompt", promptParams(sid, "hello"))
	if e == nil || e["code"] != float64(-32000) || !strings.Contains(e["message"].(string), "dsh-acp login") {
		t.Fatalf("prompt without a key: %v, want auth_required naming the sign-in", e)
	}
	if e := errorOf("authenticate", map[string]any{"methodId": "dsh-acp-login"}); e == nil || e["code"] != float64(-32000) {
		t.Errorf("authenticate before signing in: %v, want auth_required", e)
	}
	getenv := env(func(k string) string {
		return map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}[k]
	})
	if _, err := storeKey(getenv, "sk-new"); err != nil {
		t.Fatal(err)
	}
	if e := errorOf("authenticate", map[string]any{"methodId": "dsh-acp-login"}); e != nil {
		t.Errorf("authenticate after signing in: %v", e)
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
	if err := os.WriteFile(filepath.Join(filepath.Dir(keyPath), configFileName), []byte(conf), 0o600); err != nil {
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
