package executor_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

type rssReport struct {
	GrowthKiB int64
	Out       executor.Output
	SpillSize int64
	SpillSHA  string
	Err       string
}

// rssChild runs one command that prints a lot, in a process of its own so
// the peak RSS is this capture's and no other test's.
func rssChild() int {
	rep := rssReport{}
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	l, err := executor.NewLocal(executor.Options{SpillDir: os.Getenv("DSH_RSS_SPILL"), DefaultWorkdir: os.TempDir(), KeepSpillFiles: true})
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	// Warm up buffers and the spill path so the measurement is the stream's.
	if _, err := l.Run(ctx, executor.Spec{Command: "seq 100000"}); err != nil {
		rep.Err = err.Error()
		return 0
	}
	base := proctab.ResetPeakRSS()
	res, err := l.Run(ctx, executor.Spec{Command: os.Getenv("DSH_RSS_CMD")})
	rep.GrowthKiB = proctab.SelfStatusKiB("VmHWM") - base
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	rep.Out = res.Stdout
	rep.Out.Text = rep.Out.Text[max(0, len(rep.Out.Text)-64):]
	f, err := os.Open(res.Stdout.SpillPath)
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	defer f.Close()
	h := sha256.New()
	rep.SpillSize, _ = io.Copy(h, f)
	rep.SpillSHA = hex.EncodeToString(h.Sum(nil))
	return 0
}

// Memory stays bounded whatever a command prints, and the spill file holds
// every byte.
func TestCaptureMemoryBounded(t *testing.T) {
	// Not parallel: it measures memory and moves 200 MB.
	if testing.Short() {
		t.Skip("moves 200 MB")
	}
	ctx := testutil.WithTimeout(t, 60*time.Second)
	const stream = "seq 1 24000000" // 204,888,897 bytes, every line distinct
	want, err := exec.CommandContext(ctx, "bash", "-c", stream+" | sha256sum").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := testutil.Child(t, ctx, "rss")
	cmd.Env = append(cmd.Env, "DSH_RSS_SPILL="+t.TempDir(), "DSH_RSS_CMD="+stream)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var rep rssReport
	if err := json.Unmarshal(out, &rep); err != nil || rep.Err != "" {
		t.Fatalf("child report %q: %v %s", out, err, rep.Err)
	}
	t.Logf("peak RSS growth %d KiB for %d bytes", rep.GrowthKiB, rep.Out.Bytes)
	if rep.GrowthKiB < 0 || rep.GrowthKiB > 32<<10 {
		t.Errorf("peak RSS grew by %d KiB, want at most 32 MiB", rep.GrowthKiB)
	}
	if rep.Out.Bytes != 204888897 || !rep.Out.Truncated || rep.SpillSize != rep.Out.Bytes {
		t.Errorf("bytes %d, truncated %v, spill size %d", rep.Out.Bytes, rep.Out.Truncated, rep.SpillSize)
	}
	if !strings.HasSuffix(rep.Out.Text, "23999999\n24000000\n") {
		t.Errorf("tail %q", rep.Out.Text)
	}
	if wantSHA := strings.Fields(string(want))[0]; rep.SpillSHA != wantSHA {
		t.Errorf("spill sha256 %s, want %s", rep.SpillSHA, wantSHA)
	}
}

// apiKeyProbes try every way a command could find the agent's key.
var apiKeyProbes = []string{
	"env",
	"set",
	"cat /proc/self/environ",
	"cat /proc/$PPID/environ",
	"cat /proc/$PPID/cmdline",
	"grep -a -o 'sk-[0-9a-f]*' /proc/$PPID/environ /proc/$PPID/task/*/environ",
}

// apiKeyChild is an agent process with the key in its real environment.
func apiKeyChild() int {
	key := os.Getenv("DSH_API_KEY")
	if os.Getenv("DSH_ALLOW_INSPECTION") != "1" {
		// What cmd/dsh-acp does at start; the executor leaves the
		// process-wide hardening to the program.
		if err := protectProcess(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	l, err := executor.NewLocal(executor.Options{
		Secrets:        []string{key},
		DefaultWorkdir: os.TempDir(),
	})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, probe := range apiKeyProbes {
		res, err := l.Run(ctx, executor.Spec{Command: probe})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Printf("== %s\n%s\n%s\n", probe, res.Stdout.Text, res.Stderr.Text)
	}
	return 0
}

// A command can never print the agent's API key: not from its environment,
// not from the agent's /proc entries. The control run (process left
// inspectable) shows the probes would see a leak.
func TestAPIKeyNotVisible(t *testing.T) {
	t.Parallel()
	ctx := testutil.WithTimeout(t, 40*time.Second)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	key := "sk-" + hex.EncodeToString(b)
	bin := os.Args[0]
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// Root may read any /proc entry whatever the agent does; the
		// threat is a command running as the agent's own unprivileged
		// user, so run the agent as nobody from a copy it can execute.
		dir, err := os.MkdirTemp("", "dsh-exec-apikey-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "executor.test")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	run := func(allow string) string {
		cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
		cmd.Dir = filepath.Dir(bin)
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"),
			testutil.ChildEnv + "=apikey",
			"DSH_API_KEY=" + key,
			"DEEPSEEK_API_KEY=" + key,
			"COPY_OF_IT=" + key,
			"AUTH_HEADER=Bearer " + key,
			"DSH_ALLOW_INSPECTION=" + allow,
			"HARMLESS=visible",
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s%s", err, out, stderr.String())
		}
		return string(out)
	}

	out := run("0")
	if strings.Contains(out, key) || strings.Contains(out, key[3:]) {
		t.Errorf("the API key leaked to a command:\n%s", out)
	}
	if !strings.Contains(out, "HARMLESS=visible") {
		t.Errorf("probes did not run as expected:\n%s", out)
	}
	if control := run("1"); !strings.Contains(control, key) {
		t.Errorf("control: an inspectable agent should expose its key through /proc, so the probes are blind:\n%s", control)
	}
}
