package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// A confined command whose cwd is $HOME (the README's own example) can
// write neither the agent's config.toml nor its stored key, whether the
// config directory exists or not: a config.toml it wrote would set what the
// next agent obeys — its --base-url (where the key is sent), --allow rules,
// its default mode. In both sandbox modes, as CI runs them. (Without the
// fix the command rewrites an existing config.toml.) With namespaces the
// denial covers that directory alone: the agent makes it when missing, so
// another tool's directory beside it can still be made (without, nothing
// above the missing path could be).
func TestSandboxCannotWriteAgentConfig(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	type mode struct {
		name string
		env  []string
	}
	for _, m := range []mode{
		{"namespaces", nil},
		{"landlock alone", []string{sandbox.SimulateEnv + "=nouserns"}},
	} {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/config file exists=%v", m.name, existing), func(t *testing.T) {
				configDenied(t, m.env, existing)
			})
		}
	}
}

// configDenied runs one case of TestSandboxCannotWriteAgentConfig: ~/.config
// exists (as for most users), and with existing so does config.toml.
func configDenied(t *testing.T, modeEnv []string, existing bool) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	home := t.TempDir()
	cfgHome := filepath.Join(home, ".config")
	dir := filepath.Join(cfgHome, "dsh-acp")
	conf, key := filepath.Join(dir, "config.toml"), filepath.Join(dir, "api-key")
	tmp := filepath.Join(home, "tmp")
	for _, d := range []string{tmp, cfgHome} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const mine = "# the user's own\n"
	if existing {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, []byte(mine), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(cfgHome, "other-tool", "settings")
	script := writeScript(t, bashTurn("",
		`mkdir -p "`+filepath.Dir(other)+`" && echo x > "`+other+`"; mkdir -p "`+dir+`"; echo 'base-url = "http://127.0.0.1:1/v1"' > "`+conf+`"; echo sk-planted > "`+key+`"; cat "`+conf+`"`,
	))
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	marker := "DSH_ORPHAN_TEST=" + hex.EncodeToString(b)
	logFile := filepath.Join(t.TempDir(), "log")
	env := append([]string{marker, "TMPDIR=" + tmp, "HOME=" + home, "XDG_CONFIG_HOME=" + cfgHome}, modeEnv...)
	p := &agentProc{proc: startProcEnv(t, env, "--script", script, "--log-file", logFile,
		"--state-dir", filepath.Join(home, ".local", "state", "dsh-acp"), "--sandbox", "on"), marker: marker, logFile: logFile}
	t.Cleanup(func() {
		for _, pid := range p.marked() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	sa := &sandboxAgent{agentProc: p, tmp: tmp}
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	sess := p.call(ctx, "session/new", map[string]any{"cwd": home, "mcpServers": []any{}})
	sid := sess["sessionId"].(string)
	p.call(ctx, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "sandbox"})
	rs := sa.prompt(ctx, sid, "go")
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
	if rs[0].exit() == 0 || strings.Contains(rs[0].text, "base-url") {
		t.Errorf("the command wrote the agent's config: %q %v", rs[0].text, rs[0].raw)
	}
	if b, err := os.ReadFile(conf); existing && string(b) != mine || !existing && !os.IsNotExist(err) {
		t.Errorf("config.toml: %q, %v", b, err)
	}
	if _, err := os.Lstat(key); !os.IsNotExist(err) {
		t.Errorf("%s was made by a confined command (%v)", key, err)
	}
	if _, err := os.Stat(other); len(modeEnv) == 0 && err != nil {
		t.Errorf("another tool's directory beside the config directory could not be made: %v (%q)", err, rs[0].text)
	}
}
