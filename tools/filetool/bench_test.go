package filetool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/tools"
)

// benchRepo makes a repository of files files (100 a directory) of Go-like
// text, with a .gitignore'd build directory beside them, once per
// benchmark binary run.
func benchRepo(b *testing.B, files int) string {
	b.Helper()
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	write := func(p, body string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(root, ".gitignore"), "build/\n*.tmp\n")
	var body strings.Builder
	for i := range files {
		body.Reset()
		fmt.Fprintf(&body, "package p%d\n\nimport \"fmt\"\n\n", i/100)
		for f := range 12 {
			fmt.Fprintf(&body, "// Func%d_%d does its part of the work.\nfunc Func%d_%d(x int) int {\n\treturn x * %d\n}\n\n", i, f, i, f, f+1)
		}
		if i%97 == 0 {
			body.WriteString("// TODO(needle): make this faster\n")
		}
		write(filepath.Join(root, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i)), body.String())
	}
	for i := range 200 {
		write(filepath.Join(root, "build", fmt.Sprintf("out%d.go", i)), "// TODO(needle) ignored\n")
	}
	return root
}

// BenchmarkSearchVsRipgrep runs grep and glob over a 10,000-file repository
// and ripgrep over the same tree with the same pattern, alternating in one
// run, and reports each tool's time over rg's (grep-x-rg, glob-x-rg-files).
// Debian's ripgrep (/usr/bin/rg) is the anchor; without it the benchmark is
// skipped. The tools do their operations as the local executor does for an
// unconfined session (HostFiles).
func BenchmarkSearchVsRipgrep(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("no rg (ripgrep) to compare with")
	}
	root := benchRepo(b, 10_000)
	ts := toolsByName(b, &hostExec{}, nil)
	caller := tools.Caller{SessionID: "bench", Cwd: root}
	grep := ts["grep"].Prepare(caller, json.RawMessage(`{"pattern":"TODO\\(needle\\)"}`))
	glob := ts["glob"].Prepare(caller, json.RawMessage(`{"pattern":"**/*.go"}`))
	runRG := func(args ...string) {
		cmd := exec.Command(rg, args...)
		cmd.Dir = root
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("rg %v: %v", args, err)
		}
	}
	// Warm the page cache and check that both find the same.
	if r := grep.Run(context.Background(), nil); r.IsError || strings.Count(r.Text, "TODO(needle)") != 104 {
		b.Fatalf("grep found %d, want 104: %.300s", strings.Count(r.Text, "TODO(needle)"), r.Text)
	}
	if r := glob.Run(context.Background(), nil); r.IsError || !strings.Contains(r.Text, "[… and 9000 more files not shown") {
		b.Fatalf("glob: %.300s", r.Text[max(0, len(r.Text)-300):])
	}
	runRG("-n", `TODO\(needle\)`)
	var ours, theirs, oursGlob, theirsGlob time.Duration
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		grep.Run(context.Background(), nil)
		ours += time.Since(t)
		t = time.Now()
		runRG("-n", `TODO\(needle\)`)
		theirs += time.Since(t)
		t = time.Now()
		glob.Run(context.Background(), nil)
		oursGlob += time.Since(t)
		t = time.Now()
		runRG("--files")
		theirsGlob += time.Since(t)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/n/1000, "grep-ms")
	b.ReportMetric(float64(theirs.Microseconds())/n/1000, "rg-ms")
	b.ReportMetric(float64(ours)/float64(theirs), "grep-x-rg")
	b.ReportMetric(float64(oursGlob.Microseconds())/n/1000, "glob-ms")
	b.ReportMetric(float64(theirsGlob.Microseconds())/n/1000, "rg-files-ms")
	b.ReportMetric(float64(oursGlob)/float64(theirsGlob), "glob-x-rg-files")
}
