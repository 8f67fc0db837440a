// Package npm_test checks the npm packages of a release as a user gets
// them: the launcher on every platform it knows, and the packed tarballs
// installed with no registry at all.
package npm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"github.com/dsh-acp/dsh-acp/internal/mockllm"
	"github.com/dsh-acp/dsh-acp/internal/releasetest"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node runs the launcher in a Node whose process.platform and process.arch
// say what the test wants, from dir (where its require looks for the
// platform packages).
func launcher(t *testing.T, dir, platform, arch string) (int, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the launcher cannot run here")
	}
	script, err := filepath.Abs("dsh-acp.js")
	if err != nil {
		t.Fatal(err)
	}
	fake := `Object.defineProperty(process, "platform", {value: process.argv[1]});
Object.defineProperty(process, "arch", {value: process.argv[2]});
require(process.argv[3]);`
	cmd := exec.Command(node, "-e", fake, platform, arch, script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestLauncherWhereThereIsNoBinary: on Windows the launcher says why there
// is no dsh-acp there and names WSL; on a platform with no package, and
// where the platform's package was left out, it says so; each exits 1.
func TestLauncherWhereThereIsNoBinary(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, c := range []struct {
		platform, arch string
		want           []string
	}{
		{"win32", "x64", []string{"Linux and macOS", "bash", "WSL"}},
		{"win32", "arm64", []string{"Linux and macOS", "bash", "WSL"}},
		{"freebsd", "x64", []string{"no dsh-acp binary for freebsd/x64"}},
		{"linux", "ia32", []string{"no dsh-acp binary for linux/ia32"}},
		{"linux", "x64", []string{"dsh-acp-linux-x64", "not installed", "optional"}},
		{"darwin", "arm64", []string{"dsh-acp-darwin-arm64", "not installed"}},
	} {
		code, stderr := launcher(t, empty, c.platform, c.arch)
		if code != 1 {
			t.Errorf("%s/%s: exit %d, want 1 (stderr %q)", c.platform, c.arch, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s/%s: stderr %q does not say %q", c.platform, c.arch, stderr, w)
			}
		}
	}
}

// TestPackedTarballs: the release's npm tarballs installed with no registry
// access give a dsh-acp that npx runs: it is this platform's static binary
// of the release, it answers initialize over stdio, and `dsh-acp login`
// through it signs in on a terminal.
func TestPackedTarballs(t *testing.T) {
	dir, version := releasetest.Release(t, "..")
	home := t.TempDir()
	prefix := releasetest.Install(t, dir, version, home)

	// What was installed: no install scripts anywhere, the platform's
	// package is an optional dependency of the main one, and it holds the
	// same binary as the release's archive for this platform.
	var main struct {
		Bin      map[string]string `json:"bin"`
		Scripts  map[string]string `json:"scripts"`
		Optional map[string]string `json:"optionalDependencies"`
	}
	readJSON(t, filepath.Join(prefix, "node_modules", "dsh-acp", "package.json"), &main)
	if main.Bin["dsh-acp"] == "" || len(main.Scripts) != 0 {
		t.Errorf("dsh-acp's package.json: bin %v, scripts %v (want a bin and no scripts)", main.Bin, main.Scripts)
	}
	for _, p := range []string{"dsh-acp-linux-x64", "dsh-acp-linux-arm64", "dsh-acp-darwin-x64", "dsh-acp-darwin-arm64"} {
		if main.Optional[p] != version {
			t.Errorf("optionalDependencies[%s] = %q, want %s", p, main.Optional[p], version)
		}
	}
	var plat struct {
		OS      []string          `json:"os"`
		CPU     []string          `json:"cpu"`
		Scripts map[string]string `json:"scripts"`
	}
	platDir := filepath.Join(prefix, "node_modules", releasetest.NPMPlatform())
	readJSON(t, filepath.Join(platDir, "package.json"), &plat)
	if len(plat.OS) != 1 || plat.OS[0] != runtime.GOOS || len(plat.CPU) != 1 || !strings.HasSuffix(releasetest.NPMPlatform(), "-"+plat.CPU[0]) || len(plat.Scripts) != 0 {
		t.Errorf("%s's package.json: os %v cpu %v scripts %v", releasetest.NPMPlatform(), plat.OS, plat.CPU, plat.Scripts)
	}
	binary := filepath.Join(platDir, "bin", "dsh-acp")
	checkPlatformBinary(t, binary)
	if want := archiveBinary(t, dir, version); want != fileSum(t, binary) {
		t.Errorf("%s is not the binary of the release archive for %s/%s", binary, runtime.GOOS, runtime.GOARCH)
	}

	npx := func(args ...string) *exec.Cmd { return releasetest.Npx(prefix, home, args...) }
	t.Run("version", func(t *testing.T) {
		out, err := npx("version").Output()
		if err != nil || string(out) != "dsh-acp "+version+"\n" {
			t.Errorf("npx dsh-acp version: %q, %v; want dsh-acp %s", out, err, version)
		}
		// The binary's exit code comes through the launcher.
		if err := npx("version", "extra").Run(); exitCode(err) != 2 {
			t.Errorf("npx dsh-acp version extra: %v, want exit status 2 (a usage error)", err)
		}
	})
	t.Run("signals", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("finds the processes in /proc")
		}
		ctx := testutil.WithTimeout(t, releasetest.Slow)
		cmd := npx()
		releasetest.Initialize(t, ctx, cmd, releasetest.RegistryInitialize(), func() {
			// SIGTERM to the launcher alone: the agent, whose stdin is still
			// open, ends only if the launcher passes the signal on.
			launcher, agent := launcherAndAgent(t, cmd.Process.Pid, binary)
			if err := syscall.Kill(launcher, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			testutil.WaitGone(t, ctx, agent)
		})
	})
	t.Run("initialize", func(t *testing.T) {
		ctx := testutil.WithTimeout(t, releasetest.Slow)
		cmd := npx()
		initialized := releasetest.Initialize(t, ctx, cmd, releasetest.RegistryInitialize(), func() {
			if runtime.GOOS != "linux" {
				return
			}
			// The process npx ended up running is the platform package's binary.
			if !runsBinary(t, cmd.Process.Pid, binary) {
				t.Errorf("no process under npx runs %s", binary)
			}
		})
		info, _ := initialized["agentInfo"].(map[string]any)
		if info["name"] != "dsh-acp" || info["version"] != version {
			t.Errorf("agentInfo = %v, want dsh-acp %s", initialized["agentInfo"], version)
		}
	})
	t.Run("login", func(t *testing.T) {
		ctx := testutil.WithTimeout(t, releasetest.Slow)
		m := mockllm.New(t, mockllm.Options{Key: "sk-from-npx"})
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		screen := newScreen(ptm)
		defer func() {
			ptm.Close()
			<-screen.done
		}()
		cmd := npx("login", "--base-url", m.URL)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		defer func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}()
		screen.waitFor(t, ctx, "API key for "+m.URL)
		if _, err := ptm.Write([]byte("sk-from-npx\r")); err != nil {
			t.Fatal(err)
		}
		shown := screen.waitFor(t, ctx, "Signed in")
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("npx dsh-acp login: %v; the terminal showed %q", err, shown)
			}
		case <-ctx.Done():
			t.Fatalf("npx dsh-acp login did not end; the terminal showed %q", screen.shown())
		}
		// Stored in the user's config directory, whatever the file's shape.
		stored := false
		_ = filepath.WalkDir(filepath.Join(home, ".config", "dsh-acp"), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(path)
				stored = stored || bytes.Contains(b, []byte("sk-from-npx"))
			}
			return nil
		})
		if !stored {
			t.Errorf("the key is not stored under %s; the terminal showed %q", filepath.Join(home, ".config", "dsh-acp"), shown)
		}
	})
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// archiveBinary is the checksum of the binary in the release archive for
// this platform, read with tar as a user unpacks it.
func archiveBinary(t *testing.T, dir, version string) [32]byte {
	t.Helper()
	name := fmt.Sprintf("dsh-acp_%s_%s_%s", version, runtime.GOOS, runtime.GOARCH)
	out := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", filepath.Join(dir, name+".tar.gz"), "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	return fileSum(t, filepath.Join(out, name, "dsh-acp"))
}

// checkPlatformBinary: an executable for this machine's CPU, and on Linux
// a static one (no program interpreter).
func checkPlatformBinary(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s: %v, mode %v; want an executable", path, err, fi)
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s is not an ELF binary: %v", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if f.Machine != want {
		t.Errorf("%s is for %v, this machine is %v", path, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a program interpreter: not static", path)
		}
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// launcherAndAgent finds, in session sid, the Node process running the
// launcher and the process running binary.
func launcherAndAgent(t *testing.T, sid int, binary string) (launcher, agent int) {
	t.Helper()
	ps, err := proctab.List()
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Sid != sid || p.Zombie {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.Pid)); err == nil && exe == want {
			agent = p.Pid
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 2 && strings.HasPrefix(filepath.Base(args[0]), "node") &&
			(strings.HasSuffix(args[1], "/.bin/dsh-acp") || strings.HasSuffix(args[1], "/dsh-acp.js")) {
			launcher = p.Pid
		}
	}
	if launcher == 0 || agent == 0 {
		t.Fatalf("in the session of npx: launcher pid %d, agent pid %d; want both", launcher, agent)
	}
	return launcher, agent
}

// runsBinary reports whether a process of session sid runs binary.
func runsBinary(t *testing.T, sid int, binary string) bool {
	t.Helper()
	ps, err := proctab.List()
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Sid != sid {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.Pid)); err == nil && exe == want {
			return true
		}
	}
	return false
}

// screen collects what a pseudo-terminal shows.
type screen struct {
	mu   sync.Mutex
	seen bytes.Buffer
	more chan struct{}
	done chan struct{}
}

func newScreen(ptm io.Reader) *screen {
	s := &screen{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			s.mu.Lock()
			s.seen.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screen) shown() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.String()
}

func (s *screen) waitFor(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	for {
		if got := s.shown(); strings.Contains(got, want) {
			return got
		}
		select {
		case <-s.more:
		case <-ctx.Done():
			t.Fatalf("the terminal never showed %q; it showed %q", want, s.shown())
		}
	}
}
