package layering_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// signalCalls are the calls that send a signal by pid or group, by package.
var signalCalls = map[string][]string{
	"syscall": {"Kill", "Tgkill"},
	"unix":    {"Kill", "Tgkill", "Tkill", "PidfdSendSignal"},
}

// selfSignals are the files allowed to signal outside executor/proctab, and
// why: none ends another process.
var selfSignals = map[string]string{
	// Ctrl-C typed at the runner's question interrupts the runner itself,
	// by the same path as one typed at any other time.
	"internal/execclient/ask.go": "SIGINT to its own pid",
}

// TestOnlyProctabEnds: outside executor/proctab no non-test Go file sends a
// signal to a process or group — syscall/unix Kill and friends (but with
// signal 0, which only asks whether it exists), an *os.Process's Kill or
// Signal — so every SIGTERM has its SIGCONT and every end its grace, in
// one place (proctab.End, SignalGroup, EndChild). Without type information
// an os.Process call is told by its shape: X.Kill() with no argument,
// X.Signal(sig) with one, X not a package.
func TestOnlyProctabEnds(t *testing.T) {
	root := "../.."
	checked := 0
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
		checked++
		for _, what := range signalsIn(f) {
			if _, ok := selfSignals[rel]; !ok {
				t.Errorf("%s calls %s: only executor/proctab signals processes (proctab.End, SignalGroup, SignalProcess, EndChild)", rel, what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk missed the tree", checked)
	}
}

// signalsIn returns the signalling calls of f (see TestOnlyProctabEnds).
func signalsIn(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		name := sel.Sel.Name
		if pkg, ok := sel.X.(*ast.Ident); ok {
			if slices.Contains(signalCalls[pkg.Name], name) && !probe(call) {
				out = append(out, pkg.Name+"."+name)
			}
			if _, isPkg := signalCalls[pkg.Name]; isPkg || pkg.Name == "os" {
				return true // unix.Signal(n) is a conversion
			}
		}
		if (name == "Kill" && len(call.Args) == 0) || (name == "Signal" && len(call.Args) == 1) {
			out = append(out, "(*os.Process)."+name)
		}
		return true
	})
	return out
}

// probe reports whether a Kill-like call sends signal 0, which only asks
// whether the process exists.
func probe(call *ast.CallExpr) bool {
	i := 1 // Kill(pid, sig), Tkill(tid, sig), PidfdSendSignal(fd, sig, …)
	if strings.HasSuffix(call.Fun.(*ast.SelectorExpr).Sel.Name, "Tgkill") {
		i = 2 // Tgkill(tgid, tid, sig)
	}
	if len(call.Args) <= i {
		return false
	}
	lit, ok := call.Args[i].(*ast.BasicLit)
	return ok && lit.Value == "0"
}

// The scan sees what it is meant to: each shape in a file is reported, and
// a probe (signal 0) and a conversion are not.
func TestSignalsInSeesEachShape(t *testing.T) {
	src := `package p
func f() {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = unix.Kill(pid, unix.SIGTERM)
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	_ = cmd.Process.Kill()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = unix.Kill(pid, 0)
	_ = unix.PidfdSendSignal(fd, 0, nil, 0)
	_ = unix.Signal(1)
	_ = ws.Signal()
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := signalsIn(f)
	want := []string{"syscall.Kill", "unix.Kill", "unix.PidfdSendSignal", "(*os.Process).Kill", "(*os.Process).Signal"}
	if !slices.Equal(got, want) {
		t.Errorf("signalsIn = %q; want %q", got, want)
	}
}
