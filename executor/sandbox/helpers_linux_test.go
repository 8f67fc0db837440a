package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// probe runs the real probe once for the whole test binary.
var probe = sync.OnceValue(func() sandbox.Availability { return sandbox.Probe(nil) })

// mode is one way of confining: with namespaces or Landlock alone.
type mode struct {
	name string
	nons bool
}

// modes lists the modes this kernel offers; Landlock is required.
func modes(t *testing.T) []mode {
	t.Helper()
	a := probe()
	if a.LandlockABI < 1 {
		t.Skip("no Landlock on this kernel")
	}
	ms := []mode{{name: "landlock", nons: true}}
	if a.UserNS && a.PIDNS {
		ms = append(ms, mode{name: "namespaces"})
	}
	return ms
}

func launcher(t *testing.T, m mode) *sandbox.Launcher {
	t.Helper()
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: probe(), NoNamespaces: m.nons})
	if err != nil {
		t.Fatalf("NewLauncher: %v", err)
	}
	if l.Namespaces() == m.nons {
		t.Fatalf("Namespaces() = %v in mode %s", l.Namespaces(), m.name)
	}
	return l
}

var bashPath = sync.OnceValue(func() string {
	p, err := exec.LookPath("bash")
	if err != nil {
		panic(err)
	}
	return p
})

// policy is the usual policy: a fresh cwd and session temp dir.
func policy(t *testing.T) sandbox.Policy {
	t.Helper()
	d, err := sandbox.NewSessionDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Remove() })
	return sandbox.Policy{Workdir: t.TempDir(), TempDir: d.Path, Shell: bashPath()}
}

// result is how a command ended.
type result struct {
	stdout, stderr string
	code           int            // -1 when killed
	sig            syscall.Signal // 0 unless killed
}

// proc is a started confined command.
type proc struct {
	process executor.Process
	pid     int
	stdout  *os.File // read end; nil when collected into out
	out     bytes.Buffer
	errb    bytes.Buffer
	copies  sync.WaitGroup // the copies into out and errb
	done    chan struct{}
	once    sync.Once
	status  syscall.WaitStatus
}

// start launches command confined to p, in a zygote of its own. The
// process group is killed at ctx's end, and the zygote closed at the
// test's, so that no test leaves a process behind.
func start(ctx context.Context, t *testing.T, l *sandbox.Launcher, command string, p sandbox.Policy, pipeOut bool) *proc {
	t.Helper()
	z, err := l.Zygote(p)
	if err != nil {
		t.Fatalf("Zygote: %v", err)
	}
	t.Cleanup(func() {
		if err := z.Close(); err != nil {
			t.Errorf("close zygote: %v", err)
		}
	})
	return startIn(ctx, t, z, command, p, pipeOut)
}

// startIn starts command in z (whose policy is p).
func startIn(ctx context.Context, t *testing.T, z *sandbox.Zygote, command string, p sandbox.Policy, pipeOut bool) *proc {
	t.Helper()
	pr := &proc{done: make(chan struct{})}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TMPDIR="+p.TempDir)
	pr.process, err = z.Start(command, env, outW, errW)
	_ = outW.Close()
	_ = errW.Close()
	if err != nil {
		_ = outR.Close()
		_ = errR.Close()
		t.Fatalf("start: %v", err)
	}
	pr.pid = pr.process.Pid()
	copyInto := func(dst *bytes.Buffer, src *os.File) {
		pr.copies.Add(1)
		go func() {
			defer pr.copies.Done()
			_, _ = dst.ReadFrom(src)
			_ = src.Close()
		}()
	}
	copyInto(&pr.errb, errR)
	if pipeOut {
		pr.stdout = outR
	} else {
		copyInto(&pr.out, outR)
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-pr.pid, syscall.SIGKILL)
		case <-pr.done:
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-pr.pid, syscall.SIGKILL)
		pr.wait()
		if pr.stdout != nil {
			_ = pr.stdout.Close()
		}
	})
	return pr
}

// readLine reads stdout up to a newline: the command's handshake.
func (pr *proc) readLine(t *testing.T) string {
	t.Helper()
	var b []byte
	one := make([]byte, 1)
	for {
		n, err := pr.stdout.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return string(b)
			}
			b = append(b, one[0])
		}
		if err != nil {
			t.Fatalf("read handshake: %v (got %q, stderr %q)", err, b, pr.errb.String())
		}
	}
}

// wait waits once; later calls return the same.
func (pr *proc) wait() result {
	pr.once.Do(func() {
		pr.status, _ = pr.process.Wait()
		close(pr.done)
		pr.copies.Wait()
	})
	res := result{stdout: pr.out.String(), stderr: pr.errb.String(), code: -1}
	ws := pr.status
	if ws.Signaled() {
		res.sig = ws.Signal()
	} else {
		res.code = ws.ExitStatus()
	}
	return res
}

// run runs command to its end.
func run(ctx context.Context, t *testing.T, l *sandbox.Launcher, command string, p sandbox.Policy) result {
	t.Helper()
	return start(ctx, t, l, command, p, false).wait()
}

// bare runs command with plain bash, for comparison.
func bare(ctx context.Context, command string) (string, error) {
	out, err := exec.CommandContext(ctx, bashPath(), "-c", command).CombinedOutput()
	return string(out), err
}

func expectOK(t *testing.T, r result, what string) {
	t.Helper()
	if r.code != 0 {
		t.Errorf("%s: exit %d sig %v, stdout %q stderr %q", what, r.code, r.sig, r.stdout, r.stderr)
	}
}

func expectDenied(t *testing.T, r result, what string) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("%s: want exit 1 with Permission denied, got exit %d sig %v, stderr %q", what, r.code, r.sig, r.stderr)
	}
}

// expectHidden: a path covered by a mount (see hideDenied) fails as a
// missing, unopenable or read-only one.
func expectHidden(t *testing.T, r result, what string) {
	t.Helper()
	hidden := false
	for _, msg := range []string{"Permission denied", "No such file", "Read-only file system"} {
		hidden = hidden || strings.Contains(r.stderr, msg)
	}
	if r.code != 1 || !hidden || r.stdout != "" {
		t.Errorf("%s: want exit 1 with the path hidden, got exit %d sig %v, stdout %q stderr %q", what, r.code, r.sig, r.stdout, r.stderr)
	}
}

// confined starts spec through c, its stdout and stderr both on the pipe
// whose read end it returns (closed, and the command's group killed, at
// the test's end). Each of with changes the confinement first.
func confined(t *testing.T, c *sandbox.Confiner, spec executor.Spec, with ...func(*executor.Confinement)) (executor.Process, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	x := executor.Confinement{Shell: bashPath(), Spec: spec, Env: os.Environ(), Stdout: w, Stderr: w}
	for _, f := range with {
		f(&x)
	}
	pr, err := c.Start(x)
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		t.Fatalf("start %q: %v", spec.Command, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pr.Pid(), syscall.SIGKILL); _ = r.Close() })
	return pr, r
}

// runConfined runs spec through c to its end and returns what it wrote
// (both streams) and its wait status.
func runConfined(t *testing.T, c *sandbox.Confiner, spec executor.Spec, with ...func(*executor.Confinement)) (string, syscall.WaitStatus) {
	t.Helper()
	pr, r := confined(t, c, spec, with...)
	out, _ := io.ReadAll(r)
	ws, err := pr.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(out), ws
}

// newConfiner is a Confiner over l with opts (Launcher filled in, and
// TempParent when empty), closed at the test's end.
func newConfiner(t *testing.T, l *sandbox.Launcher, opts sandbox.ConfinerOptions) *sandbox.Confiner {
	t.Helper()
	opts.Launcher = l
	if opts.TempParent == "" {
		opts.TempParent = t.TempDir()
	}
	c, err := sandbox.NewConfiner(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close confiner: %v", err)
		}
	})
	return c
}

// withSpill gives the command its owner's spill directory (readable) inside
// the executor's private one (the other owners' spill files: denied).
func withSpill(own, private string) func(*executor.Confinement) {
	return func(x *executor.Confinement) { x.SpillDir, x.PrivateDir = own, private }
}
