package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUnusedKeyNotInMemory: of two model keys in the environment, only the
// one in use (DSH_API_KEY) stays in the agent's memory; the other
// (DEEPSEEK_API_KEY) is found nowhere in it. Reading another process's
// memory needs root (the agent is not dumpable).
func TestUnusedKeyNotInMemory(t *testing.T) {
	t.Parallel()
	const used, unused = "sk-in-use-4b1d9e", "sk-not-used-8c2f7a"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "--script", writeScript(t, `{"text":"hi"}`), "--state-dir", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DSH_API_KEY=" + used, "DEEPSEEK_API_KEY=" + unused}
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	// Answered initialize: the re-exec and the start are done.
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	found, err := memoryHolds(cmd.Process.Pid, []byte(used), []byte(unused))
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot read the agent's memory: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !found[used] {
		t.Fatalf("the key in use is not in the agent's memory either: the scan reads nothing")
	}
	if found[unused] {
		t.Errorf("the unused DEEPSEEK_API_KEY is in the agent's memory")
	}
}

// memoryHolds scans the readable mappings of pid for each needle.
func memoryHolds(pid int, needles ...[]byte) (map[string]bool, error) {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, err
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	found := map[string]bool{}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end-start > 1<<30 {
			continue
		}
		buf := make([]byte, end-start)
		n, err := mem.ReadAt(buf, int64(start))
		if err != nil && !errors.Is(err, io.EOF) && n == 0 {
			if errors.Is(err, os.ErrPermission) {
				return nil, err
			}
			continue // [vvar] and the like
		}
		for _, nd := range needles {
			if bytes.Contains(buf[:n], nd) {
				found[string(nd)] = true
			}
		}
	}
	return found, nil
}
