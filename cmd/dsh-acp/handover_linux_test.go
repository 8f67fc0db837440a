package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// After the credential hand-over the agent holds the model key and the
// --keep-env names, nothing else: GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY and a
// database URL with a password are in neither its environment block nor its
// memory (read as root, whom non-dumpable does not stop), and no command
// sees them; the start-up log names what was withheld.
func TestOnlyUsedCredentialsKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secrets := map[string]string{
		"GITHUB_TOKEN":          "ghp_dropped_1f2e3d",
		"AWS_SECRET_ACCESS_KEY": "aws_dropped_4c5b6a",
		"DATABASE_URL":          "postgres://app:dbpw_dropped_7a8b@db/app",
	}
	const key, kept = "sk-modelkey-9d8c7b6a", "kept_value_5e4d"
	extra := []string{"DSH_API_KEY=" + key, "KEEP_ME_TOKEN=" + kept, "SSH_AUTH_SOCK=/run/agent.sock"}
	for n, v := range secrets {
		extra = append(extra, n+"="+v)
	}
	dir := t.TempDir()
	logFile := dir + "/log"
	script := writeScript(t, taggedCall("", "env", false, 0), `{"text":"done"}`)
	p := startProcEnv(t, extra, "--script", script, "--keep-env", "KEEP_ME_TOKEN", "--log-file", logFile)
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	sess := p.call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
	sid := sess["sessionId"].(string)
	p.call(ctx, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto"})
	id := p.send("session/prompt", promptParams(sid, "go"))
	var frames strings.Builder
	p.await(ctx, "prompt answer", func(m map[string]any) bool {
		fmt.Fprintln(&frames, m)
		f, ok := m["id"].(float64)
		return ok && int(f) == id && m["method"] == nil
	})
	out := frames.String()
	if !strings.Contains(out, "KEEP_ME_TOKEN="+kept) || !strings.Contains(out, "SSH_AUTH_SOCK=/run/agent.sock") {
		t.Errorf("env did not show the kept variables:\n%s", out)
	}
	for n, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("a command saw %s", n)
		}
	}
	pid := p.cmd.Process.Pid
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err == nil && (bytes.Contains(environ, []byte(key)) || bytes.Contains(environ, []byte("ghp_dropped"))) {
		t.Errorf("credentials in the environment block: %q", environ)
	}
	log, _ := os.ReadFile(logFile)
	for _, n := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "--keep-env NAME"} {
		if !bytes.Contains(log, []byte(n)) {
			t.Errorf("start-up log does not name %s:\n%s", n, log)
		}
	}
	if os.Getuid() != 0 {
		t.Log("not root: the memory check needs CAP_SYS_PTRACE")
		return
	}
	mem := readMemory(t, pid)
	if !bytes.Contains(mem, []byte(key)) || !bytes.Contains(mem, []byte(kept)) {
		t.Fatal("control: the model key and the kept variable should be in memory; the scan is blind")
	}
	for n, v := range secrets {
		if bytes.Contains(mem, []byte(v)) {
			t.Errorf("%s is still in the agent's memory", n)
		}
	}
}

// readMemory reads every readable mapping of pid.
func readMemory(t *testing.T, pid int) []byte {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []byte
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || fs[1][0] != 'r' {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b-a > 1<<30 {
			continue
		}
		buf := make([]byte, b-a)
		n, _ := f.ReadAt(buf, int64(a))
		all = append(all, buf[:n]...)
	}
	return all
}
