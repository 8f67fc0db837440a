package executor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	def := t.TempDir()
	l := newLocal(t, executor.Options{Limits: executor.Limits{DefaultTimeout: 5 * time.Second, MaxTimeout: 10 * time.Second}, DefaultWorkdir: def})
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   executor.Spec
		want executor.Spec
	}{
		{"defaults", executor.Spec{Command: "x"}, executor.Spec{Command: "x", Workdir: def, Timeout: 5 * time.Second}},
		{"given kept", executor.Spec{Workdir: "/usr", Timeout: time.Second}, executor.Spec{Workdir: "/usr", Timeout: time.Second}},
		{"clamped", executor.Spec{Workdir: "/", Timeout: time.Hour}, executor.Spec{Workdir: "/", Timeout: 10 * time.Second}},
		{"relative workdir", executor.Spec{Workdir: "sub/../dir"}, executor.Spec{Workdir: filepath.Join(def, "dir"), Timeout: 5 * time.Second}},
		{"owner kept", executor.Spec{Owner: "s1"}, executor.Spec{Owner: "s1", Workdir: def, Timeout: 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Resolve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b func(executor.Stream, []byte)) bool { return true })); d != "" {
				t.Errorf("Resolve (-want +got):\n%s", d)
			}
		})
	}

	t.Run("process cwd and builtin defaults", func(t *testing.T) {
		l2, err := executor.NewLocal(executor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		got, err := l2.Resolve(executor.Spec{Workdir: "rel"})
		if err != nil {
			t.Fatal(err)
		}
		want := executor.Spec{Workdir: filepath.Join(cwd, "rel"), Timeout: 120 * time.Second}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Resolve (-want +got):\n%s", d)
		}
		got, _ = l2.Resolve(executor.Spec{Timeout: time.Hour})
		if got.Timeout != 600*time.Second {
			t.Errorf("max timeout = %v, want 600s", got.Timeout)
		}
	})
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("here"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, executor.Options{Env: []string{"PATH=" + os.Getenv("PATH"), "KEEP_ME=yes"}})
	tests := []struct {
		name       string
		cmd        string
		wantOut    string
		wantErr    string
		wantCode   int
		wantSignal string
	}{
		{"echo", "echo hello", "hello\n", "", 0, ""},
		{"true", "true", "", "", 0, ""},
		{"separate streams", "echo out; echo err >&2", "out\n", "err\n", 0, ""},
		{"exit code", "echo failing; exit 3", "failing\n", "", 3, ""},
		{"self signal", "kill -USR1 $$", "", "", -1, "SIGUSR1"},
		{"stdin is /dev/null", "cat; readlink /proc/self/fd/0", "/dev/null\n", "", 0, ""},
		{"workdir", "cat marker; pwd", "here" + dir + "\n", "", 0, ""},
		{"own process group and session", `read -r _ _ _ _ pg sid _ < /proc/$$/stat; [ "$pg" = $$ ] && [ "$sid" = $$ ] && echo leader`, "leader\n", "", 0, ""},
		{"agent env", `echo "$NO_COLOR $TERM $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GCM_INTERACTIVE ${GIT_ASKPASS-unset} ${SSH_ASKPASS-unset} $KEEP_ME"`,
			"1 dumb cat cat 0 never unset unset yes\n", "", 0, ""},
		{"no output no newline", "printf abc", "abc", "", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			res, err := l.Run(ctx, executor.Spec{Command: tc.cmd, Workdir: dir})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := []any{res.Stdout.Text, res.Stderr.Text, res.ExitCode, res.Signal, res.TimedOut, res.Workdir}
			want := []any{tc.wantOut, tc.wantErr, tc.wantCode, tc.wantSignal, false, dir}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if res.Stdout.Truncated || res.Stdout.Bytes != int64(len(tc.wantOut)) {
				t.Errorf("stdout accounting: %+v", res.Stdout)
			}
			if res.Duration <= 0 || res.Timeout != executor.DefaultLimits().DefaultTimeout {
				t.Errorf("duration %v timeout %v", res.Duration, res.Timeout)
			}
		})
	}
}

func TestRunObserve(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{})
	var mu sync.Mutex
	seen := map[executor.Stream]string{}
	res, err := l.Run(testutil.Context(t), executor.Spec{
		Command: "echo a; echo b >&2; echo c",
		Observe: func(s executor.Stream, p []byte, _ string) {
			mu.Lock()
			seen[s] += string(p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[executor.Stream]string{executor.Stdout: "a\nc\n", executor.Stderr: "b\n"}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("observed (-want +got):\n%s", d)
	}
	if res.Stdout.Text != "a\nc\n" {
		t.Errorf("stdout %q", res.Stdout.Text)
	}
}

// TestRunObserveSpill: the observer learns a stream's spill file with the
// first read after the stream overflowed, and only then; the other stream
// has none.
func TestRunObserveSpill(t *testing.T) {
	t.Parallel()
	l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: 100}})
	var mu sync.Mutex
	var before, after int // stdout bytes observed without and with a spill path
	paths := map[executor.Stream]string{}
	res, err := l.Run(testutil.Context(t), executor.Spec{
		Command: "seq 1 1000; echo e >&2",
		Observe: func(s executor.Stream, p []byte, spill string) {
			mu.Lock()
			defer mu.Unlock()
			if spill == "" {
				if s == executor.Stdout {
					before += len(p)
				}
				return
			}
			if prev, ok := paths[s]; ok && prev != spill {
				t.Errorf("spill path of %v changed from %q to %q", s, prev, spill)
			}
			paths[s] = spill
			after += len(p)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[executor.Stream]string{executor.Stdout: res.Stdout.SpillPath}, paths); d != "" {
		t.Errorf("observed spill paths (-want +got):\n%s", d)
	}
	if before > 100 || before+after != int(res.Stdout.Bytes) {
		t.Errorf("observed %d bytes before the spill path and %d with it; stream %d bytes, tail 100", before, after, res.Stdout.Bytes)
	}
}

func TestRunSpawnErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    executor.Options
		workdir string
		want    string
	}{
		{"missing workdir", executor.Options{}, "/x/y", "workdir /x/y does not exist"},
		{"workdir is a file", executor.Options{}, file, "workdir " + file + " is not a directory"},
		{"no bash", executor.Options{Shell: filepath.Join(dir, "no-such-bash")}, dir, "start bash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, tc.opts)
			_, err := l.Run(testutil.Context(t), executor.Spec{Command: "true", Workdir: tc.workdir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run error = %v, want it to contain %q", err, tc.want)
			}
			id, err := l.Start(executor.Spec{Command: "true", Workdir: tc.workdir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start error = %v, want it to contain %q", err, tc.want)
			}
			info, err := l.Info(id)
			if err != nil {
				t.Fatal(err)
			}
			if info.Status.State != executor.Failed || info.Status.Err == nil {
				t.Errorf("status = %+v, want failed with error", info.Status)
			}
		})
	}
}

// The three kill cases under a timeout, plus grandchildren. Each command
// prints its pids and "ready" before the timer can matter to it; the timeout
// is long enough for bash to set its trap on a loaded machine.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	tests := []struct {
		name       string
		cmd        string
		wantOut    string // prefix of stdout after the pid line
		wantCode   int
		wantSignal string
	}{
		{"killed at once", "echo $$; echo ready; sleep 100", "ready\n", -1, "SIGTERM"},
		{"trap exits in time", "echo $$; trap 'echo got; exit 0' TERM; echo ready; while :; do sleep 0.05; done", "ready\ngot\n", 0, ""},
		{"trap ignores, force-killed", "echo $$; trap '' TERM; echo ready; while :; do sleep 0.05; done", "ready\n", -1, "SIGKILL"},
		{"grandchildren gone", "sleep 100 & echo $!; (trap '' TERM; while :; do sleep 0.05; done) & echo $!; echo ready; wait", "ready\n", -1, "SIGTERM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}})
			ctx := testutil.Context(t)
			res, err := l.Run(ctx, executor.Spec{Command: tc.cmd, Timeout: timeout})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.TimedOut || res.Timeout != timeout {
				t.Errorf("TimedOut=%v Timeout=%v, want true %v", res.TimedOut, res.Timeout, timeout)
			}
			if !strings.Contains(res.Stdout.Text, tc.wantOut) {
				t.Errorf("stdout %q, want it to contain %q", res.Stdout.Text, tc.wantOut)
			}
			if res.ExitCode != tc.wantCode || res.Signal != tc.wantSignal {
				t.Errorf("exit %d signal %q, want %d %q", res.ExitCode, res.Signal, tc.wantCode, tc.wantSignal)
			}
			for _, pid := range pids(t, res.Stdout.Text) {
				waitUntil(ctx, t, fmt.Sprintf("pid %d gone", pid), func() bool { return testutil.Gone(pid) })
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cmd        string
		wantSignal string
	}{
		{"killed at once", "echo ready; sleep 100", "SIGTERM"},
		{"trap ignores", "trap '' TERM; echo ready; while :; do sleep 0.05; done", "SIGKILL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, executor.Options{Limits: executor.Limits{KillGrace: 300 * time.Millisecond}})
			ctx, cancel := context.WithCancel(testutil.Context(t))
			defer cancel()
			// Handshake: cancel once the command said it is ready.
			res, err := l.Run(ctx, executor.Spec{Command: tc.cmd, Observe: func(s executor.Stream, p []byte, _ string) {
				if strings.Contains(string(p), "ready") {
					cancel()
				}
			}})
			if !errors.Is(err, executor.ErrAborted) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Run error = %v, want ErrAborted wrapping context.Canceled", err)
			}
			if res.Stdout.Text != "ready\n" || res.Signal != tc.wantSignal || res.TimedOut {
				t.Errorf("partial result %+v", res)
			}
		})
	}

	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		l := newLocal(t, executor.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.Run(ctx, executor.Spec{Command: "echo no"})
		if !errors.Is(err, executor.ErrAborted) {
			t.Fatalf("Run error = %v, want ErrAborted", err)
		}
	})
}

// A foreground command that leaves `sleep 100 &` holding its stdout returns
// shortly after the shell exits, and the leftover is terminated.
func TestRunLeftoverBackground(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  string
	}{
		{"holds pipes", "sleep 100 & echo $!"},
		{"ignores TERM and holds pipes", "(trap '' TERM; while :; do sleep 0.05; done) & echo $!"},
		{"pipes closed", "sleep 100 >/dev/null 2>&1 & echo $!"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, executor.Options{Limits: executor.Limits{LeftoverGrace: 200 * time.Millisecond, KillGrace: 300 * time.Millisecond}})
			ctx := testutil.Context(t)
			start := time.Now()
			res, err := l.Run(ctx, executor.Spec{Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			// Generous for a loaded machine, far below the leftover's 100s.
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Run took %v", d)
			}
			if res.ExitCode != 0 || res.Signal != "" || res.TimedOut {
				t.Errorf("result %+v", res)
			}
			ps := pids(t, res.Stdout.Text)
			if len(ps) != 1 {
				t.Fatalf("stdout %q, want one pid", res.Stdout.Text)
			}
			waitUntil(ctx, t, "leftover gone", func() bool { return testutil.Gone(ps[0]) })
		})
	}
}

func TestRunOutputLimits(t *testing.T) {
	t.Parallel()
	const limit = 1000
	tests := []struct {
		name          string
		cmd           string
		wantText      string
		wantTruncated bool
		wantBytes     int64
		wantSpill     string // full content expected in the spill file
	}{
		{"below", "head -c 999 /dev/zero | tr '\\0' a", strings.Repeat("a", 999), false, 999, ""},
		{"exactly at the limit", "head -c 1000 /dev/zero | tr '\\0' a", strings.Repeat("a", 1000), false, 1000, ""},
		{"one over", "printf b; head -c 1000 /dev/zero | tr '\\0' a", strings.Repeat("a", 1000), true, 1001, "b" + strings.Repeat("a", 1000)},
		{"utf-8 boundary", "printf 'é%.0s' $(seq 600); printf y", strings.Repeat("é", 499) + "y", true, 1201, strings.Repeat("é", 600) + "y"},
		{"many writes", "for i in $(seq 1000); do echo line$i; done", "", true, 7893, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spillParent := t.TempDir()
			l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: limit}, SpillDir: spillParent})
			res, err := l.Run(testutil.Context(t), executor.Spec{Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Stdout
			if out.Truncated != tc.wantTruncated || out.Bytes != tc.wantBytes {
				t.Fatalf("Truncated=%v Bytes=%d, want %v %d", out.Truncated, out.Bytes, tc.wantTruncated, tc.wantBytes)
			}
			if tc.wantText != "" && out.Text != tc.wantText {
				t.Errorf("Text = %q, want %q", out.Text, tc.wantText)
			}
			if len(out.Text) > limit {
				t.Errorf("kept %d bytes, limit %d", len(out.Text), limit)
			}
			if !tc.wantTruncated {
				if out.SpillPath != "" {
					t.Errorf("SpillPath = %q for an untruncated stream", out.SpillPath)
				}
				return
			}
			full, err := os.ReadFile(out.SpillPath)
			if err != nil {
				t.Fatalf("read spill: %v", err)
			}
			if int64(len(full)) != out.Bytes || !strings.HasSuffix(string(full), out.Text) {
				t.Errorf("spill holds %d bytes, stream had %d; tail not its suffix", len(full), out.Bytes)
			}
			if tc.wantSpill != "" && string(full) != tc.wantSpill {
				t.Errorf("spill content differs")
			}
			fi, err := os.Stat(out.SpillPath)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("spill file mode %v (%v), want 0600", fi.Mode(), err)
			}
			// The owner's directory (0700) in the executor's (0700).
			for _, dir := range []string{filepath.Dir(out.SpillPath), filepath.Dir(filepath.Dir(out.SpillPath))} {
				di, err := os.Stat(dir)
				if err != nil || di.Mode().Perm() != 0o700 {
					t.Errorf("spill dir %s mode %v (%v), want private 0700", dir, di.Mode(), err)
				}
			}
			if got := filepath.Dir(filepath.Dir(filepath.Dir(out.SpillPath))); got != spillParent {
				t.Errorf("spill file %s not two levels under %s", out.SpillPath, spillParent)
			}
		})
	}

	t.Run("spill unavailable", func(t *testing.T) {
		t.Parallel()
		// A regular file as the spill parent: the private directory cannot
		// be made, whoever runs the test (root included).
		notDir := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(notDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		l := newLocal(t, executor.Options{Limits: executor.Limits{TailBytes: limit}, SpillDir: notDir})
		res, err := l.Run(testutil.Context(t), executor.Spec{Command: "head -c 5000 /dev/zero"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Stdout.Truncated || res.Stdout.SpillPath != "" || len(res.Stdout.Text) != limit || res.Stdout.Bytes != 5000 {
			t.Errorf("stdout = Truncated %v SpillPath %q len %d Bytes %d", res.Stdout.Truncated, res.Stdout.SpillPath, len(res.Stdout.Text), res.Stdout.Bytes)
		}
	})

	t.Run("one private dir per executor, removed by Close", func(t *testing.T) {
		t.Parallel()
		parent := t.TempDir()
		l, err := executor.NewLocal(executor.Options{Limits: executor.Limits{TailBytes: 10}, SpillDir: parent})
		if err != nil {
			t.Fatal(err)
		}
		ctx := testutil.Context(t)
		dirs := map[string]bool{}
		for range 3 {
			res, err := l.Run(ctx, executor.Spec{Command: "seq 100; seq 100 >&2", Workdir: parent})
			if err != nil {
				t.Fatal(err)
			}
			dirs[filepath.Dir(res.Stdout.SpillPath)] = true
			dirs[filepath.Dir(res.Stderr.SpillPath)] = true
		}
		if len(dirs) != 1 {
			t.Errorf("spill dirs %v, want one", dirs)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("spill dir left after Close: %v", ents)
		}
	})
}

// Many commands at once, from many goroutines: each gets its own output.
func TestRunConcurrent(t *testing.T) {
	// Not parallel: 200 shells at once on two cores would stall the
	// timing-sensitive tests around it.
	l, err := executor.NewLocal(executor.Options{DefaultWorkdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.WithTimeout(t, 60*time.Second)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	groups := make([]int, n)
	for i := range n {
		wg.Go(func() {
			cmd := fmt.Sprintf("echo $$ >&2; for j in 1 2 3; do echo out%d-$j; echo err%d-$j >&2; done; exit %d", i, i, i%7)
			res, err := l.Run(ctx, executor.Spec{Command: cmd})
			pg, rest, _ := strings.Cut(res.Stderr.Text, "\n")
			groups[i], _ = strconv.Atoi(pg)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%d: %w", i, err)
			case res.Stdout.Text != fmt.Sprintf("out%d-1\nout%d-2\nout%d-3\n", i, i, i),
				rest != fmt.Sprintf("err%d-1\nerr%d-2\nerr%d-3\n", i, i, i),
				res.ExitCode != i%7:
				errs <- fmt.Errorf("%d: mixed result %+v", i, res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pg := range groups {
		if pg <= 0 || !testutil.GroupGone(pg) {
			t.Errorf("group %d has live members after Close", pg)
		}
	}
}

// Credentials in the base environment never reach a command, except the
// names configured to be kept; API keys go whatever KeepEnv says.
func TestRunEnvScrubbed(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789"
	l := newLocal(t, executor.Options{
		Env: []string{
			"PATH=" + os.Getenv("PATH"), "HOME=/nowhere",
			"GITHUB_TOKEN=ghp_x", "Db_Password=pw", "AWS_SECRET_ACCESS_KEY=aws", "NPM_TOKEN=npm",
			"DSH_API_KEY=" + key, "DEEPSEEK_API_KEY=" + key, "OPENAI_API_KEY=" + key,
			"CUSTOM_MODEL_CRED=" + key, "LOOKS_INNOCENT=" + key,
			"GIT_ASKPASS=/usr/bin/askpass", "SSH_ASKPASS=/usr/bin/askpass", "TERM=xterm",
		},
		KeepEnv: []string{"NPM_TOKEN", "DSH_API_KEY"},
		Limits:  executor.Limits{CredentialEnv: append(executor.DefaultLimits().CredentialEnv, "CUSTOM_MODEL_CRED")},
		Secrets: []string{key},
	})
	res, err := l.Run(testutil.Context(t), executor.Spec{Command: "env | sort"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GCM_INTERACTIVE=never", "GIT_EDITOR=true", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "HOME=/nowhere",
		"NO_COLOR=1", "NPM_TOKEN=npm", "PAGER=cat", "PATH=" + os.Getenv("PATH"), "TERM=dumb"}
	var got []string
	for _, kv := range strings.Split(strings.TrimSpace(res.Stdout.Text), "\n") {
		// bash itself adds these.
		if name, _, _ := strings.Cut(kv, "="); name != "PWD" && name != "SHLVL" && name != "_" && name != "OLDPWD" {
			got = append(got, kv)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("environment (-want +got):\n%s", d)
	}
}
