package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// goEnv is the environment a test's own `go build` runs in: the caches of
// this one (so a temp HOME does not mean a cold build) and nothing else of
// the user's.
func goEnv(t *testing.T, home string) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return env
}

// TestReleaseBuildSaysTheRelease: a binary stamped as the release build
// stamps it says exactly that version, with nothing after it, both to a
// person and in agentInfo.version.
func TestReleaseBuildSaysTheRelease(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "dsh-acp")
	build := exec.Command("go", "build", "-ldflags", "-X main.release=9.8.7", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "version").Output(); err != nil || string(out) != "dsh-acp 9.8.7\n" {
		t.Errorf("version: %q, %v", out, err)
	}
	cmd := exec.Command(bin, "--no-persist")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	p := startCmd(t, cmd)
	init := p.call(testutil.Context(t), "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	info, _ := init["agentInfo"].(map[string]any)
	if info["name"] != "dsh-acp" || info["version"] != "9.8.7" {
		t.Errorf("agentInfo = %v, want dsh-acp 9.8.7", init["agentInfo"])
	}
}

// TestFromSourceBuildSaysItsCommit runs the README's from-source build
// command as written (its ~ is the test's HOME) where the environment turns
// VCS stamping off (GOFLAGS=-buildvcs=false, as on this project's CI
// machines), and the binary it builds names the commit it was built from.
func TestFromSourceBuildSaysItsCommit(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not built from a git checkout (git rev-parse: %v): the from-source command is for a clone", err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "CGO_ENABLED=0 go build ") && strings.Contains(line, "-o ~/.local/bin/dsh-acp") {
			commands = append(commands, line)
		}
	}
	if len(commands) == 0 {
		t.Fatal("README.md shows no from-source build command (CGO_ENABLED=0 go build … -o ~/.local/bin/dsh-acp)")
	}
	for _, c := range commands[1:] {
		if c != commands[0] {
			t.Errorf("README.md shows two different from-source commands:\n%s\n%s", commands[0], c)
		}
	}
	home := t.TempDir()
	build := exec.Command("bash", "-c", commands[0])
	build.Dir = root
	build.Env = append(goEnv(t, home), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", commands[0], err, out)
	}
	out, err := exec.Command(filepath.Join(home, ".local", "bin", "dsh-acp"), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if rev := strings.TrimSpace(string(head))[:12]; !strings.HasPrefix(string(out), "dsh-acp (devel) "+rev) {
		t.Errorf("the from-source build says %q, want the commit %s", out, rev)
	}
}
