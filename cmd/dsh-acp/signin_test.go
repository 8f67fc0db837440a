package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// Client capabilities as the clients people use send them.
var (
	// stockZed asks for the _meta["terminal-auth"] form only.
	stockZed = map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true,
		"_meta": map[string]any{"terminal_output": true, "terminal-auth": true}}
	// betaClient declares the spec's terminal auth (Zed's acp-beta).
	betaClient = map[string]any{"auth": map[string]any{"terminal": true}}
	// bothForms is the ACP registry's check: both.
	bothForms = map[string]any{"auth": map[string]any{"terminal": true}, "terminal": true,
		"_meta": map[string]any{"terminal_output": true, "terminal-auth": true}}
	// noTerminal declares neither (codecompanion).
	noTerminal = map[string]any{"fs": map[string]any{"readTextFile": true}}
)

// startSignInAgent starts the real binary serving ACP with home as its HOME
// and extra variables, and initializes it as a client with caps.
func startSignInAgent(t *testing.T, home string, caps map[string]any, extraEnv []string, args ...string) (*proc, map[string]any) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(homeEnv(home), extraEnv...)
	p := startCmd(t, cmd)
	init := p.call(testutil.Context(t), "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	return p, init
}

// errorOf sends a request and returns its error (nil on success) and its
// result.
func (p *proc) errorOf(ctx context.Context, method string, params any) (map[string]any, map[string]any) {
	p.t.Helper()
	id := p.send(method, params)
	r := p.await(ctx, method+" answer", func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	e, _ := r["error"].(map[string]any)
	res, _ := r["result"].(map[string]any)
	return e, res
}

func newSessionParams(t *testing.T) map[string]any {
	return map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}
}

// TestSignInOffers: each client is offered the sign-in in the form it
// runs, and only that: the spec's terminal method to a client declaring
// auth.terminal; stock Zed's _meta["terminal-auth"] (the binary's own
// path, its serve flags, then login) on an agent-type method; both to a
// client declaring both; nothing to a client declaring neither, whose
// prompt without a key still says how to sign in. Without a key for an
// endpoint that needs one, session/new answers auth_required to a client
// that can sign in; logout is advertised.
func TestSignInOffers(t *testing.T) {
	t.Parallel()
	const endpoint = "https://api.example.invalid/v1"
	serveArgs := []string{"--base-url", endpoint, "--allow", "git status", "--no-persist"}
	for _, c := range []struct {
		name            string
		caps            map[string]any
		typed, withMeta bool
	}{
		{"stock Zed", stockZed, false, true},
		{"acp-beta", betaClient, true, false},
		{"registry check", bothForms, true, true},
		{"no terminal", noTerminal, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			home := t.TempDir()
			p, init := startSignInAgent(t, home, c.caps, nil, serveArgs...)
			if lo := init["agentCapabilities"].(map[string]any)["auth"].(map[string]any)["logout"]; lo == nil {
				t.Errorf("agentCapabilities.auth.logout not advertised: %v", init["agentCapabilities"])
			}
			methods := init["authMethods"].([]any)
			if !c.typed && !c.withMeta {
				if len(methods) != 0 {
					t.Fatalf("a client without a terminal was offered %v", methods)
				}
				// It gets its session; the prompt says how to sign in.
				if e, res := p.errorOf(ctx, "session/new", newSessionParams(t)); e != nil {
					t.Fatalf("session/new: %v", e)
				} else {
					e, _ := p.errorOf(ctx, "session/prompt", promptParams(res["sessionId"].(string), "hi"))
					if e == nil || e["code"] != float64(-32000) || !strings.Contains(e["message"].(string), "dsh-acp login --base-url "+endpoint) {
						t.Errorf("prompt without a key: %v", e)
					}
				}
				return
			}
			if len(methods) != 1 {
				t.Fatalf("authMethods %v, want one", methods)
			}
			m := methods[0].(map[string]any)
			if m["id"] != "dsh-acp-login" {
				t.Errorf("method id %v", m["id"])
			}
			if c.typed != (m["type"] == "terminal") {
				t.Errorf("type %v, want terminal: %v", m["type"], c.typed)
			}
			if c.typed && (len(m["args"].([]any)) != 1 || m["args"].([]any)[0] != "login") {
				t.Errorf("terminal args %v, want [login]", m["args"])
			}
			meta, _ := m["_meta"].(map[string]any)
			ta, _ := meta["terminal-auth"].(map[string]any)
			if c.withMeta != (ta != nil) {
				t.Fatalf("_meta %v; want terminal-auth: %v", meta, c.withMeta)
			}
			if ta != nil {
				var args []string
				for _, a := range ta["args"].([]any) {
					args = append(args, a.(string))
				}
				if ta["command"] != binPath || !filepath.IsAbs(ta["command"].(string)) || !slices.Equal(args, append(slices.Clone(serveArgs), "login")) || ta["label"] == "" {
					t.Errorf("terminal-auth %v, want %s %q login", ta, binPath, serveArgs)
				}
				env, _ := ta["env"].(map[string]any)
				if env["HOME"] != home || env["XDG_CONFIG_HOME"] != filepath.Join(home, "config") {
					t.Errorf("terminal-auth env %v", env)
				}
			}
			e, _ := p.errorOf(ctx, "session/new", newSessionParams(t))
			if e == nil || e["code"] != float64(-32000) || !strings.Contains(e["message"].(string), "dsh-acp login --base-url "+endpoint) {
				t.Errorf("session/new without a key: %v, want auth_required saying how to sign in", e)
			}
			if e, _ := p.errorOf(ctx, "authenticate", map[string]any{"methodId": "dsh-acp-login"}); e == nil || e["code"] != float64(-32000) {
				t.Errorf("authenticate before signing in: %v, want auth_required", e)
			}
		})
	}
}

// TestNoSignInNeeded: a scripted model, a loopback endpoint and a key
// from the environment never answer session/new with auth_required; a
// scripted run offers no sign-in.
func TestNoSignInNeeded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"scripted", nil, []string{"--script", "x"}},
		{"loopback", nil, []string{"--base-url", "http://127.0.0.1:1/v1"}},
		{"key in the environment", []string{"DSH_API_KEY=sk-from-the-env-0123456789"}, []string{"--base-url", "https://api.example.invalid/v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, init := startSignInAgent(t, t.TempDir(), stockZed, c.env, append(c.args, "--no-persist")...)
			if e, _ := p.errorOf(testutil.Context(t), "session/new", newSessionParams(t)); e != nil {
				t.Errorf("session/new: %v", e)
			}
			if c.name == "scripted" && len(init["authMethods"].([]any)) != 0 {
				t.Errorf("a scripted run offers a sign-in: %v", init["authMethods"])
			}
		})
	}
}

// modelValues are the values of a session's model option.
func modelValues(res map[string]any) []string {
	var out []string
	for _, o := range res["configOptions"].([]any) {
		o := o.(map[string]any)
		if o["id"] != "model" {
			continue
		}
		for _, v := range o["options"].([]any) {
			out = append(out, v.(map[string]any)["value"].(string))
		}
	}
	return out
}

// TestSignInInTerminalWithoutRestart: stock Zed runs the _meta sign-in in
// a terminal while the agent runs; the next prompt uses the key at once
// (no authenticate call, no restart); stock Zed's authenticate then sends
// the open session the endpoint's model list, fetched again, and the next
// session has it too. Logout over ACP then removes the key:
// the next prompt is auth_required again.
func TestSignInInTerminalWithoutRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const key = "sk-0123456789abcdef0123456789abcdef"
	m := mockllm.New(t, mockllm.Options{Key: key})
	home := t.TempDir()
	p, init := startSignInAgent(t, home, stockZed, nil, "--base-url", m.URL, "--no-persist")

	// A loopback endpoint may need no key: the session opens, and the
	// endpoint's refusal of the prompt is auth_required.
	e, res := p.errorOf(ctx, "session/new", newSessionParams(t))
	if e != nil {
		t.Fatalf("session/new: %v", e)
	}
	if got := modelValues(res); len(got) != 1 {
		t.Errorf("models before signing in: %v, want the configured one only", got)
	}
	sid := res["sessionId"].(string)
	if e, _ := p.errorOf(ctx, "session/prompt", promptParams(sid, "hi")); e == nil || e["code"] != float64(-32000) {
		t.Fatalf("prompt before signing in: %v, want auth_required", e)
	}

	// The sign-in, as Zed runs it: command, args and env of the method.
	ta := init["authMethods"].([]any)[0].(map[string]any)["_meta"].(map[string]any)["terminal-auth"].(map[string]any)
	var args, env []string
	for _, a := range ta["args"].([]any) {
		args = append(args, a.(string))
	}
	for k, v := range ta["env"].(map[string]any) {
		env = append(env, k+"="+v.(string))
	}
	term := newTerminal(t)
	_, done := startOnTerminal(t, term, env, nil, args...)
	term.waitFor(ctx, "API key for "+m.URL)
	term.typeLine(key)
	if code := waitExit(ctx, t, done); code != 0 {
		t.Fatalf("login in the terminal: exit %d\n%s", code, term.shown())
	}

	// No authenticate: the prompt just works now.
	e, res = p.errorOf(ctx, "session/prompt", promptParams(sid, "hi again"))
	if e != nil || res["stopReason"] != "end_turn" {
		t.Fatalf("prompt after signing in: %v %v", e, res)
	}
	// Stock Zed calls authenticate once its terminal closes: it answers
	// that a key is there, and the open thread's picker is sent the
	// endpoint's models first.
	id := p.send("authenticate", map[string]any{"methodId": "dsh-acp-login"})
	p.await(ctx, "the open session's new model list", func(m map[string]any) bool {
		params, _ := m["params"].(map[string]any)
		up, _ := params["update"].(map[string]any)
		return m["method"] == "session/update" && params["sessionId"] == sid && up["sessionUpdate"] == "config_option_update" &&
			slices.Equal(modelValues(up), mockllm.DeepSeekModels)
	})
	if r := p.await(ctx, "authenticate answer", func(m map[string]any) bool { f, _ := m["id"].(float64); return int(f) == id }); r["error"] != nil {
		t.Errorf("authenticate after signing in: %v", r["error"])
	}
	e, res = p.errorOf(ctx, "session/new", newSessionParams(t))
	if e != nil {
		t.Fatalf("session/new after signing in: %v", e)
	}
	if got := modelValues(res); !slices.Equal(got, mockllm.DeepSeekModels) {
		t.Errorf("models after signing in: %v, want the endpoint's %v", got, mockllm.DeepSeekModels)
	}

	// Logout over ACP: the key is gone, for this run and the next.
	if e, _ := p.errorOf(ctx, "logout", map[string]any{}); e != nil {
		t.Fatalf("logout: %v", e)
	}
	if e, _ := p.errorOf(ctx, "session/prompt", promptParams(sid, "after logout")); e == nil || e["code"] != float64(-32000) {
		t.Errorf("prompt after logout: %v, want auth_required", e)
	}
	b, err := os.ReadFile(filepath.Join(home, "config", "dsh-acp", "keys.json"))
	if err != nil || strings.Contains(string(b), key) {
		t.Errorf("the stored keys after logout: %q, %v", b, err)
	}
}
