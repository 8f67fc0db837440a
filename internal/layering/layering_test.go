// Package layering_test keeps the package arrows of design.md pointing down:
// the executor and the tools never learn about the protocol, the agent loop
// never imports the protocol layer, and only the protocol layer, the command
// and the tests speak to the ACP SDK. It also keeps the executor the one
// owner of processes: the MCP tools start none, only executor/proctab
// reads the process table, and only it sends the signals that end
// processes (signal_test.go); and it keeps out every package of a
// container client that would work at every process's start.
package layering_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	"tools/filetool":     {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "permission"},
	"tools/mcptool":      {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor", module + "permission"},
	"permission":         {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor", module + "turn"},
	"permission/project": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "executor", module + "tools"},
	// The model loop is given what it reads of the project: it depends on
	// no reader of the file system of ours (no repository, no change
	// tracker, no instructions reader, no untrusted reads).
	"agent": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor", module + "turn",
		module + "instructions", module + "internal/repo", module + "changes", module + "internal/untrusted"},
	"agent/openai":   {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor"},
	"agent/scripted": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "executor"},
	"sessions":       {"github.com/coder/acp-go-sdk", module + "acp", module + "executor", module + "tools/bashtool", module + "turn"},
	"sessions/store": {"github.com/coder/acp-go-sdk", "github.com/openai/openai-go/", module + "acp", module + "sessions", module + "agent", module + "executor", module + "tools", module + "permission"},
	"acp":            {module + "executor", module + "tools/bashtool", module + "tools/filetool", module + "cmd/", module + "agent/openai", module + "agent/scripted"},
	// A turn's orchestration stands below the protocol, which implements
	// what it asks of the user, and above the model loop.
	"turn": {"github.com/coder/acp-go-sdk", module + "acp", module + "executor", module + "tools/bashtool", module + "tools/filetool", module + "cmd/", module + "changes"},
	// The instructions reader: below the turn, above the model loop whose
	// types it fills.
	"instructions": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "turn", module + "executor", module + "tools/", module + "changes"},
	// The wire orders frames for the handlers and knows nothing above it.
	"acp/wire": {module},
	// What a command changed is measured from the files alone.
	"changes": {"github.com/coder/acp-go-sdk", module},
	// What a repository is: a leaf over untrusted reads.
	"internal/repo":      {module},
	"executor/docker":    {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions", module + "agent", module + "tools", module + "permission"},
	"internal/logbridge": {module + "acp", module + "agent"},
	// Named after the agent process; below everything that makes the
	// directories (but the process table's reader, see allowed).
	"executor/agentdir": {module},
	// The one reader of the process table imports nothing of ours.
	"executor/proctab": {module},
	// The shared test helpers stand below everything they help test (but
	// the process table's reader, see allowed).
	"internal/testutil": {module},
	"internal/mockllm":  {module},
	// The engine finder for tests builds the binary; it imports nothing of ours.
	"internal/dockertest": {module},
	// How files the agent did not write are read: below everything.
	"internal/untrusted": {module},
	// The stored keys: a leaf under the command, over untrusted reads.
	"internal/keystore": {module},
	// The settings table's mechanism knows nothing of the agent's
	// behaviour: the command states the settings and wires the values.
	"internal/config": {module},
	// exec's ACP client speaks to the agent through the SDK alone: none
	// of the agent's packages (but the tools' shared rendering of a call
	// and a plan, which the editor sees the same).
	// The commands over the state directory read the store and the
	// project rules, nothing of a running agent's.
	"internal/storecmd": {module + "acp", module + "agent", module + "executor", module + "cmd/", module + "sessions/store/"},
	// Completion scripts are written from the commands and flags given.
	"internal/completion": {module},
	// Keeping credentials out of the environment block knows which names
	// are credentials (the executor's rules) and nothing of the agent.
	"internal/secretenv": {module + "acp", module + "agent", module + "sessions", module + "tools", module + "cmd/"},
	// Which key goes to which endpoint: the endpoint's form and the
	// stored keys, nothing of sessions or the protocol.
	"internal/signin": {module + "acp", module + "sessions", module + "cmd/"},
	// The sandbox's setup from the settings: the sandbox and nothing else
	// of the agent's.
	"internal/sandboxsetup": {module + "acp", module + "agent", module + "sessions", module + "tools", module + "cmd/", module + "executor/docker"},
	// The build's version: a leaf.
	"internal/buildinfo":  {module},
	"internal/execclient": {module + "acp", module + "sessions", module + "agent", module + "executor", module + "permission", module + "changes", module + "tools/", module + "cmd/", module + "internal/config"},
	// /undo does its file operations through the executor, below the
	// protocol and the session registry (which hands it the journal).
	"undo": {"github.com/coder/acp-go-sdk", module + "acp", module + "sessions"},
}

// allowed are the exceptions to forbidden: what a package may import
// although a rule above covers it. The first two read the process table,
// which only executor/proctab does; changes reads ignore files as
// untrusted.
var allowed = map[string][]string{
	"executor/agentdir": {module + "executor/proctab"},
	"internal/testutil": {module + "executor/proctab"},
	"changes":           {module + "internal/untrusted", module + "internal/repo"},
	"internal/repo":     {module + "internal/untrusted"},
	"internal/keystore": {module + "internal/untrusted"},
	"internal/config":   {module + "internal/untrusted"},
}

// forbiddenImports maps a package to packages it must not import directly
// (its dependencies may: the MCP SDK has a command transport of its own).
// The executor starts, signals and reaps every process of the agent, so
// the MCP tools, which only ask it for a service, have no use for either.
var forbiddenImports = map[string][]string{
	"tools/mcptool": {"os/exec", "golang.org/x/sys/unix", "syscall"},
	// The file tools do every file operation through the executor and
	// start no process.
	"tools/filetool": {"os", "os/exec", "golang.org/x/sys/unix", "syscall"},
	// The protocol layer only translates: it reads no file (the turn
	// reads a prompt's linked files, the instructions reader the
	// project's) and decides no permission (permission.Decide, applied by
	// the turn); it depends on both only through package turn.
	"acp": {"os", "io/fs", "syscall", module + "internal/untrusted", module + "internal/repo", module + "instructions", module + "changes", module + "permission"},
	// The model loop is given its text; it opens no file.
	"agent": {"os", "io/fs", "syscall"},
}

// testOnly are packages only tests may import: no package's build (its
// non-test files) depends on them.
// A test-only package may build on another (the release checks use the
// shared test helpers).
var testOnly = []string{module + "internal/testutil", module + "internal/mockllm", module + "internal/dockertest", module + "internal/releasetest"}

type pkg struct {
	ImportPath string
	Deps       []string
	Imports    []string
}

// packages lists the module's packages (their non-test files).
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps,Imports", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var all []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return all
		} else if err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
}

func TestLayering(t *testing.T) {
	errs, seen := violations(packages(t))
	for _, e := range errs {
		t.Error(e)
	}
	for rel := range forbidden {
		if !seen[rel] {
			t.Errorf("package %s not found: update the layering rules", rel)
		}
	}
}

// violations are the rules above that the packages break, and the
// packages with rules that were seen.
func violations(all []pkg) (errs []string, seen map[string]bool) {
	seen = map[string]bool{}
	for _, p := range all {
		rel := strings.TrimPrefix(p.ImportPath, module)
		for _, dep := range p.Deps {
			if slices.Contains(testOnly, dep) && !slices.Contains(testOnly, p.ImportPath) {
				errs = append(errs, fmt.Sprintf("%s depends on %s, which is for tests only", rel, dep))
			}
		}
		for _, imp := range p.Imports {
			if slices.Contains(forbiddenImports[rel], imp) {
				errs = append(errs, fmt.Sprintf("%s imports %s", rel, imp))
			}
		}
		rules, ok := forbidden[rel]
		if !ok {
			continue
		}
		seen[rel] = true
		for _, dep := range p.Deps {
			if slices.Contains(allowed[rel], dep) {
				continue
			}
			for _, bad := range rules {
				if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) || strings.HasPrefix(dep, bad+"/") {
					errs = append(errs, fmt.Sprintf("%s depends on %s", rel, dep))
				}
			}
		}
	}
	return errs, seen
}

// TestLayeringCatches: the rules of issue 30 fail a graph that breaks
// them — the model loop reaching a file-system reader, the protocol layer
// reading files or deciding permissions itself, the repository package
// leaning on anything of ours but untrusted reads — and pass the same
// graph once it keeps them.
func TestLayeringCatches(t *testing.T) {
	t.Parallel()
	broken := []pkg{
		{ImportPath: module + "agent", Deps: []string{module + "tools", module + "internal/repo", module + "changes", "os"}, Imports: []string{module + "tools", module + "changes", "os"}},
		{ImportPath: module + "acp", Deps: []string{module + "turn", module + "permission", module + "internal/untrusted"}, Imports: []string{module + "turn", module + "permission", module + "internal/untrusted", "os"}},
		{ImportPath: module + "internal/repo", Deps: []string{module + "internal/untrusted", module + "agent"}, Imports: []string{module + "internal/untrusted", module + "agent"}},
		{ImportPath: module + "turn", Deps: []string{module + "acp", module + "agent"}, Imports: []string{module + "acp", module + "agent"}},
	}
	want := []string{
		"agent imports os",
		"agent depends on " + module + "internal/repo",
		"agent depends on " + module + "changes",
		"acp imports " + module + "permission",
		"acp imports " + module + "internal/untrusted",
		"acp imports os",
		"internal/repo depends on " + module + "agent",
		"turn depends on " + module + "acp",
	}
	errs, _ := violations(broken)
	for _, w := range want {
		if !slices.Contains(errs, w) {
			t.Errorf("not caught: %s (caught: %q)", w, errs)
		}
	}
	if len(errs) != len(want) {
		t.Errorf("caught %d, want %d: %q", len(errs), len(want), errs)
	}
	kept := []pkg{
		{ImportPath: module + "agent", Deps: []string{module + "tools"}, Imports: []string{module + "tools"}},
		{ImportPath: module + "acp", Deps: []string{module + "turn", module + "permission", module + "internal/untrusted"}, Imports: []string{module + "turn"}},
		{ImportPath: module + "internal/repo", Deps: []string{module + "internal/untrusted"}, Imports: []string{module + "internal/untrusted"}},
		{ImportPath: module + "turn", Deps: []string{module + "agent", module + "permission"}, Imports: []string{module + "agent", module + "permission"}},
	}
	if errs, _ := violations(kept); len(errs) > 0 {
		t.Errorf("a graph that keeps the rules fails them: %q", errs)
	}
}

// containerClient are packages that do work at initialisation and that
// only a container client would bring (import paths, or prefixes ending in
// "/"): moby's client and its API's container types, image references,
// digests, OpenTelemetry, containerd's error types. Go initialises every
// package linked into the binary in every process of it — the agent, each
// session's zygote, the watchdog, the probe — so none may be linked at all:
// executor/docker speaks the Engine API itself (engine.go).
var containerClient = []string{"github.com/moby/moby/client", "github.com/moby/moby/api/types/container", "github.com/distribution/", "github.com/opencontainers/", "go.opentelemetry.io/", "github.com/containerd/"}

// dockerAdds are the packages executor/docker may link beyond what the
// executor itself links. Their initialisation is nothing or next to nothing
// (cmd/dsh-acp's TestInitCost holds them to it: archive/tar's is 760 bytes,
// the others have none), so a process that never makes a container pays
// for it little more than its code's size.
var dockerAdds = []string{
	"github.com/moby/moby/api/types/mount", // the mount type: imports os alone
	"archive/tar",                          // the helper's copy into a container
	"os/user",
}

func TestContainerClientCostsNothing(t *testing.T) {
	deps := map[string][]string{}
	for _, p := range packages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		deps[rel] = p.Deps
		for _, dep := range p.Deps {
			for _, c := range containerClient {
				if dep == c || (strings.HasSuffix(c, "/") && strings.HasPrefix(dep, c)) || strings.HasPrefix(dep, c+"/") {
					t.Errorf("%s depends on %s, whose initialisation every process of the binary would pay", rel, dep)
				}
			}
		}
	}
	if deps["executor/docker"] == nil || deps["executor"] == nil {
		t.Fatal("executor or executor/docker not found: update the test")
	}
	for _, dep := range deps["executor/docker"] {
		if dep != module+"executor" && !slices.Contains(deps["executor"], dep) && !slices.Contains(dockerAdds, dep) {
			t.Errorf("executor/docker links %s, which the executor does not: if its initialisation costs next to nothing (GODEBUG=inittrace=1), add it to dockerAdds", dep)
		}
	}
}

// procPaths are the "/proc" string literals allowed outside executor/proctab,
// by file: they name /proc for a sandbox to mount or let commands read, or a
// descriptor of our own to bind-mount — none reads another process.
var procPaths = map[string][]string{
	"executor/sandbox/sandbox.go":             {"/proc"},          // the tree confined commands may read
	"executor/sandbox/helper_linux.go":        {"/proc"},          // the namespace's own proc, mounted
	"executor/sandbox/zygote_server_linux.go": {"/proc"},          // the same, by the zygote that is its init
	"executor/sandbox/landlock_linux.go":      {"/proc/self/fd/"}, // a bind mount's source: our descriptor
}

// TestOneProcReader: outside executor/proctab no non-test Go file names a
// path under /proc (the process table: what a process is, its group, its
// session, its environment) but for the allowed ones above. Tests may: they
// look at the processes they started the way a user would.
func TestOneProcReader(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "executor/proctab" || (rel != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err == nil && (v == "/proc" || strings.HasPrefix(v, "/proc/")) && !slices.Contains(procPaths[rel], v) {
				t.Errorf("%s names %q: only executor/proctab reads the process table", rel, v)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linkTime are the package variables of cmd/dsh-acp the release build sets
// with -ldflags -X: the only variables main may have.
var linkTime = []string{"release", "commit"}

// TestMainHoldsNoState: cmd/dsh-acp wires; what a run decides is in its
// values (the settings, the app), never in package variables a test or a
// second run would share. A compile-time assertion (var _ I = …) is no
// state.
func TestMainHoldsNoState(t *testing.T) {
	paths, err := filepath.Glob("../../cmd/dsh-acp/*.go")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no files of cmd/dsh-acp: %v", err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					if name.Name != "_" && !slices.Contains(linkTime, name.Name) {
						t.Errorf("%s: package variable %s: main holds no state (make it a value of the run, or a function)", filepath.Base(path), name.Name)
					}
				}
			}
		}
	}
}

// maxMainLines bounds cmd/dsh-acp's own Go (tests aside): main wires and
// the hidden helper modes; what grows past this belongs in a package.
const maxMainLines = 2000

func TestMainStaysSmall(t *testing.T) {
	paths, err := filepath.Glob("../../cmd/dsh-acp/*.go")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no files of cmd/dsh-acp: %v", err)
	}
	lines := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines > maxMainLines {
		t.Errorf("cmd/dsh-acp has %d lines of Go besides its tests, over %d: move what main does not wire into a package", lines, maxMainLines)
	}
}
