// Package layering_test keeps the package arrows of design.md pointing down:
// the executor and the tools never learn about the protocol, the agent loop
// never imports the protocol layer, and only the protocol layer, the command
// and the tests speak to the ACP SDK.
package layering_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dsh-acp/dsh-acp/"

// forbidden maps a package to import paths (or prefixes ending in "/") it
// must not depend on, directly or indirectly.
var forbidden = map[string][]string{
	"executor":           {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "tools"},
	"tools":              {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent"},
	"tools/bashtool":     {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent"},
	"tools/mcptool":      {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor", module + "permission"},
	"permission":         {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor"},
	"permission/project": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor", module + "tools"},
	"agent":              {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor"},
	"agent/openai":       {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor"},
	"agent/scripted":     {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor"},
	"sessions":           {"github.com/coder/acp-go-sdk", module + "acp", module + "executor", module + "tools/bashtool"},
	"sessions/store":     {"github.com/coder/acp-go-sdk", "github.com/openai/openai-go/", module + "acp", module + "sessions", module + "agent", module + "executor", module + "tools", module + "permission"},
	"acp":                {module + "executor", module + "tools/bashtool", module + "cmd/"},
	// The wire orders frames for the handlers and knows nothing above it.
	"acp/wire": {module},
	// What a command changed is measured from the files alone.
	"changes":            {"github.com/coder/acp-go-sdk", module},
	"executor/docker":    {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "tools", module + "permission"},
	"internal/logbridge": {module + "acp", module + "agent"},
	// Named after the agent process; below everything that makes the directories.
	"executor/agentdir": {module},
	// The shared test helpers stand below everything they help test.
	"internal/testutil": {module},
	"internal/mockllm":  {module},
	// The engine finder for tests builds the binary; it imports nothing of ours.
	"internal/dockertest": {module},
}

// testOnly are packages only tests may import: no package's build (its
// non-test files) depends on them.
var testOnly = []string{module + "internal/testutil", module + "internal/mockllm", module + "internal/dockertest"}

type pkg struct {
	ImportPath string
	Deps       []string
}

func TestLayering(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		for _, dep := range p.Deps {
			if slices.Contains(testOnly, dep) {
				t.Errorf("%s depends on %s, which is for tests only", rel, dep)
			}
		}
		rules, ok := forbidden[rel]
		if !ok {
			continue
		}
		seen[rel] = true
		for _, dep := range p.Deps {
			for _, bad := range rules {
				if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s", rel, dep)
				}
			}
		}
	}
	for rel := range forbidden {
		if !seen[rel] {
			t.Errorf("package %s not found: update the layering rules", rel)
		}
	}
}
