package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Package initialisation runs in every process of the binary — the agent,
// each session's zygote, the watchdog, the probe — whatever the process goes
// on to do, so what it costs is paid at every start. The runtime reports it
// (GODEBUG=inittrace=1): per package, the heap it allocated, which, unlike
// the time, does not move with the machine's load.

// initHeavy are the packages allowed to allocate more than initHeavyBytes at
// initialisation, each with what links it in. A package not listed that
// crosses the line fails the test: make its work lazy (sync.OnceValue) or
// name it here with its reason. A listed package that no longer crosses it
// fails too, so the list says what is true.
var initHeavy = map[string]string{
	// Reflection over its Schema type, at init.
	"github.com/google/jsonschema-go/jsonschema": "the MCP SDK (modelcontextprotocol/go-sdk/mcp)",
	// Registers its basic types.
	"encoding/gob": "the MCP SDK and go-git's config reader (go-git/gcfg)",
}

const (
	initHeavyBytes = 16 << 10
	// initBudgetBytes bounds the heap allocated by all packages' init
	// together: 0.24 MB now (0.76 MB with moby's container client, whose
	// image-reference and digest regular expressions were compiled at
	// init; 0.93 MB with the seccomp library's system-call tables too).
	initBudgetBytes = 300 << 10
	// dockerInitBytes bounds the init of what executor/docker links that
	// the executor does not (archive/tar's 760 bytes today): every process
	// pays it, whether or not a container is ever made.
	dockerInitBytes = 2 << 10
)

// TestInitCost runs the real binary with the runtime's init trace and holds
// its package initialisation to the list and the budget above.
func TestInitCost(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binPath, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GODEBUG=inittrace=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	allocs := initAllocs(t, stderr.String())
	if len(allocs) < 50 {
		t.Fatalf("the init trace names %d packages: not a trace?\n%s", len(allocs), stderr.String())
	}
	total := 0
	for pkg, n := range allocs {
		total += n
		_, listed := initHeavy[pkg]
		if n > initHeavyBytes && !listed {
			t.Errorf("package %s allocates %d bytes at initialisation, in every process of the binary: make it lazy, or list it in initHeavy with what links it in", pkg, n)
		}
	}
	for pkg := range initHeavy {
		if n, ok := allocs[pkg]; !ok || n <= initHeavyBytes {
			t.Errorf("initHeavy lists %s, which now allocates %d bytes at initialisation (linked: %v): take it off the list", pkg, n, ok)
		}
	}
	docker := 0
	for _, pkg := range dockerOnly(t) {
		docker += allocs[pkg]
	}
	if docker > dockerInitBytes {
		t.Errorf("what only executor/docker links allocates %d bytes at initialisation, in every process of the binary (the zygote and the watchdog too): over %d", docker, dockerInitBytes)
	}
	if total > initBudgetBytes {
		t.Errorf("package initialisation allocates %d bytes in all, over the budget of %d", total, initBudgetBytes)
	}
	t.Logf("package initialisation: %d packages, %d bytes", len(allocs), total)
}

// dockerOnly are the packages the binary links for executor/docker alone:
// its dependencies that the executor (which every process of the binary
// runs) does not have.
func dockerOnly(t *testing.T) []string {
	t.Helper()
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	base := deps("github.com/dsh-acp/dsh-acp/executor")
	var only []string
	for _, p := range deps("github.com/dsh-acp/dsh-acp/executor/docker") {
		if !slices.Contains(base, p) {
			only = append(only, p)
		}
	}
	if len(only) < 2 {
		t.Fatalf("executor/docker links %q beyond the executor: not what this test expects", only)
	}
	return only
}

// initAllocs reads an init trace: lines such as
//
//	init github.com/distribution/reference @6.1 ms, 0.61 ms clock, 414552 bytes, 3600 allocs
func initAllocs(t *testing.T, trace string) map[string]int {
	t.Helper()
	out := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("init trace line %q: %v", sc.Text(), err)
		}
		out[f[1]] += n
	}
	return out
}
