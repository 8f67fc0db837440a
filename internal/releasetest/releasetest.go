// Package releasetest holds what the tests of the release share: the
// release's version (CHANGELOG.md's newest), where the release build put
// its files, an npm install of its tarballs with no registry, and the ACP
// registry's own check of an agent (its initialize, as the registry's
// validator sends it). Only tests import it.
package releasetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// Slow bounds a step that runs npm or Node: on a loaded machine an npm
// install alone can take longer than testutil.Timeout.
const Slow = 3 * time.Minute

// output is a process's stderr, read while the process still writes it.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// ChangelogVersion is the newest version of root/CHANGELOG.md: the release's.
func ChangelogVersion(t testing.TB, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md has no version section (## [X.Y.Z] - date)")
	}
	return string(m[1])
}

// NPMPlatform is the npm package of this machine's binary.
func NPMPlatform() string {
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return "dsh-acp-" + runtime.GOOS + "-" + cpu
}

// Release is the directory of the release build (scripts/release), or a
// skip: CI builds it first and sets DSH_TEST_RELEASE_DIR, and then its
// absence, or npm's, fails.
func Release(t testing.TB, root string) (dir, version string) {
	t.Helper()
	version = ChangelogVersion(t, root)
	dir = os.Getenv("DSH_TEST_RELEASE_DIR")
	required := dir != ""
	if dir == "" {
		dir = filepath.Join(root, "dist")
	}
	main := filepath.Join(dir, "npm", "dsh-acp-"+version+".tgz")
	if _, err := os.Stat(main); err != nil {
		if required {
			t.Fatalf("DSH_TEST_RELEASE_DIR=%s but no %s: %v", dir, main, err)
		}
		t.Skipf("no release build here (%s; scripts/release makes it)", main)
	}
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			if required {
				t.Fatalf("DSH_TEST_RELEASE_DIR is set but %s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	return dir, version
}

// NPMEnv is a user's environment with nothing of the real one's: an empty
// home, npm's cache and config in it, and a registry nothing answers on.
func NPMEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"npm_config_cache=" + filepath.Join(home, ".npm"),
		"npm_config_userconfig=" + filepath.Join(home, ".npmrc"),
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_update_notifier=false",
		"TERM=xterm",
	}
}

// Install installs the release's main tarball and this platform's into an
// empty prefix, offline, as npm would from the registry, and returns the
// prefix.
func Install(t testing.TB, dir, version, home string) string {
	t.Helper()
	ctx := testutil.WithTimeout(t, Slow)
	prefix := t.TempDir()
	cmd := exec.CommandContext(ctx, "npm", "install", "--offline", "--no-audit", "--no-fund", "--prefix", prefix,
		filepath.Join(dir, "npm", "dsh-acp-"+version+".tgz"),
		filepath.Join(dir, "npm", NPMPlatform()+"-"+version+".tgz"))
	cmd.Env = NPMEnv(home)
	cmd.Dir = prefix
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	return prefix
}

// Npx is `npx --no-install dsh-acp ARGS` in prefix, in a session of its own
// so that every process it starts can be found and ended.
func Npx(prefix, home string, args ...string) *exec.Cmd {
	cmd := exec.Command("npx", append([]string{"--no-install", "dsh-acp"}, args...)...)
	cmd.Dir = prefix
	cmd.Env = NPMEnv(home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// RegistryInitialize is the params of the initialize the ACP registry's
// auth check sends (agentclientprotocol/registry, .github/workflows/client.py).
func RegistryInitialize() map[string]any {
	return map[string]any{
		"protocolVersion": 1,
		"clientInfo":      map[string]any{"name": "ACP Registry Validator", "version": "1.0.0"},
		"clientCapabilities": map[string]any{
			"terminal": true,
			"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
			"_meta":    map[string]any{"terminal_output": true, "terminal-auth": true},
		},
	}
}

// Initialize starts cmd (which must run in a session of its own:
// Setsid), sends it initialize with params, and returns the answer's
// result after running during (while the agent is up); then it closes
// stdin and expects a clean exit. Every process of the session is killed
// if the test ends early.
func Initialize(t testing.TB, ctx context.Context, cmd *exec.Cmd, params map[string]any, during func()) map[string]any {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &output{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	ended := false
	defer func() {
		if !ended {
			_ = proctab.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			for range lines {
			}
			_ = cmd.Wait()
		}
	}()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	for result == nil {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended before the initialize answer; stderr:\n%s", stderr.String())
			}
			var msg struct {
				ID     any             `json:"id"`
				Result map[string]any  `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatalf("stdout carried a line that is not JSON-RPC: %q", line)
			}
			if msg.ID == float64(1) {
				if msg.Result == nil {
					t.Fatalf("initialize failed: %s", msg.Error)
				}
				result = msg.Result
			}
		case <-ctx.Done():
			t.Fatalf("no initialize answer; stderr:\n%s", stderr.String())
		}
	}
	if during != nil {
		during()
	}
	stdin.Close()
	for range lines {
	}
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		ended = true
		if err != nil {
			t.Errorf("after stdin closed: %v; stderr:\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		_ = proctab.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		ended = true
		t.Fatal("the agent did not end when its stdin closed")
	}
	return result
}

// AuthMethod is an entry of initialize's authMethods, typed as the
// registry's check types it: the "type" field, else "terminal" for a
// _meta["terminal-auth"], "agent" for a _meta["agent-auth"], else "agent".
type AuthMethod struct{ ID, Type string }

// AuthMethods reads initialize's authMethods the registry's way.
func AuthMethods(result map[string]any) []AuthMethod {
	raw, _ := result["authMethods"].([]any)
	var out []AuthMethod
	for _, r := range raw {
		m, _ := r.(map[string]any)
		id, _ := m["id"].(string)
		typ, _ := m["type"].(string)
		if typ == "" {
			meta, _ := m["_meta"].(map[string]any)
			if _, ok := meta["terminal-auth"]; ok {
				typ = "terminal"
			} else if _, ok := meta["agent-auth"]; ok {
				typ = "agent"
			}
		}
		if typ == "" {
			typ = "agent"
		}
		out = append(out, AuthMethod{ID: id, Type: typ})
	}
	return out
}
