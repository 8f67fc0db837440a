package changes_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/changes"
)

// benchRepo makes a git repository of n committed files (100 per
// directory, each a few lines) with an ignored node_modules beside them.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not found")
	}
	root := b.TempDir()
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("package p\n\n// file %d\nfunc F%d() int { return %d }\n", i, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", i%100)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("node_modules/\n*.log\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"}} {
		git(b, root, args...)
	}
	return root
}

func git(b *testing.B, dir string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// cpuTime is the CPU time (user and system) this process used so far,
// and its waited-for children.
func cpuTime(b *testing.B) (self, children time.Duration) {
	var self_, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self_); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		b.Fatal(err)
	}
	sum := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return sum(self_), sum(kids)
}

// reportCPU reports the CPU time per op spent since the start marks, so
// runs on a loaded machine compare what each side costs rather than how
// much of the machine it got. For git status that is its own process's
// time (the children's), for the tracker this process's.
func reportCPU(b *testing.B, self0, kids0 time.Duration, children bool) {
	self, kids := cpuTime(b)
	d := self - self0
	if children {
		d = kids - kids0
	}
	b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func benchSizes(b *testing.B, fn func(b *testing.B, root string)) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			fn(b, benchRepo(b, n))
		})
	}
}

// BenchmarkGitStatus is the yardstick: one `git status --porcelain` on the
// same tree.
func BenchmarkGitStatus(b *testing.B) {
	benchSizes(b, func(b *testing.B, root string) {
		git(b, root, "status", "--porcelain")
		self0, kids0 := cpuTime(b)
		b.ResetTimer()
		for b.Loop() {
			git(b, root, "status", "--porcelain")
		}
		reportCPU(b, self0, kids0, true)
	})
}

// BenchmarkOneFileChanged is what a command that changes one file pays:
// Begin before it, End after it (the change itself is not timed).
func BenchmarkOneFileChanged(b *testing.B) {
	benchSizes(b, func(b *testing.B, root string) {
		tr := changes.New(changes.Options{})
		defer tr.Close()
		k := changes.Key{Session: "s", Root: root}
		tr.Begin(k).End()
		file := filepath.Join(root, "pkg005", "f042.go")
		i := 0
		self0, kids0 := cpuTime(b)
		b.ResetTimer()
		for b.Loop() {
			m := tr.Begin(k)
			b.StopTimer()
			i++
			if err := os.WriteFile(file, fmt.Appendf(nil, "package p\n// edit %d\n", i), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if cs := m.End(); len(cs) != 1 {
				b.Fatalf("%d changes, want 1", len(cs))
			}
		}
		reportCPU(b, self0, kids0, false)
	})
}

// BenchmarkNothingChanged is what a command that changes nothing pays.
func BenchmarkNothingChanged(b *testing.B) {
	benchSizes(b, func(b *testing.B, root string) {
		tr := changes.New(changes.Options{})
		defer tr.Close()
		k := changes.Key{Session: "s", Root: root}
		tr.Begin(k).End()
		self0, kids0 := cpuTime(b)
		b.ResetTimer()
		for b.Loop() {
			if cs := tr.Begin(k).End(); len(cs) != 0 {
				b.Fatalf("%d changes, want 0", len(cs))
			}
		}
		reportCPU(b, self0, kids0, false)
	})
}

// BenchmarkFirstCommand is what a session's first command pays once: the
// walk that reads every small text file into the baseline. It reports the
// heap the snapshot holds (bytes per session).
func BenchmarkFirstCommand(b *testing.B) {
	benchSizes(b, func(b *testing.B, root string) {
		var held uint64
		for b.Loop() {
			b.StopTimer()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.StartTimer()
			tr := changes.New(changes.Options{})
			m := tr.Begin(changes.Key{Session: "s", Root: root})
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			held = after.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(m)
			m.Discard()
			tr.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(held), "heap-bytes/session")
	})
}
