package mcptool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

func TestMain(m *testing.M) {
	testutil.Main(m, childMain)
}

// events is a log of strings a test can wait on without sleeping.
type events struct {
	mu      sync.Mutex
	seen    []string
	changed chan struct{}
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) add(s string) {
	e.mu.Lock()
	e.seen = append(e.seen, s)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// wait returns the first event containing sub, waiting for it.
func (e *events) wait(ctx context.Context, t *testing.T, sub string) string {
	t.Helper()
	for {
		e.mu.Lock()
		for _, s := range e.seen {
			if strings.Contains(s, sub) {
				e.mu.Unlock()
				return s
			}
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %q; saw %q", sub, e.all())
		}
	}
}

func (e *events) count(sub string) int {
	n := 0
	for _, s := range e.all() {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// lineCore forwards every logged stderr line of a stdio server to events.
type lineCore struct{ ev *events }

func (c lineCore) Enabled(zapcore.Level) bool        { return true }
func (c lineCore) With([]zapcore.Field) zapcore.Core { return c }
func (c lineCore) Sync() error                       { return nil }
func (c lineCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}
func (c lineCore) Write(_ zapcore.Entry, fs []zapcore.Field) error {
	for _, f := range fs {
		if f.Key == "line" {
			c.ev.add("stderr: " + f.String)
		}
	}
	return nil
}

// harness collects what a Servers reports.
type harness struct {
	s       *mcptool.Servers
	lines   *events // stderr lines of stdio servers
	notices *events // Notice.Message()s
	changes *events // "changed" per OnToolsChanged
	groups  *events // "start <pgid>" / "end <pgid>"
}

func start(t *testing.T, list []mcptool.ServerConfig, opts mcptool.Options) *harness {
	t.Helper()
	h := &harness{lines: newEvents(), notices: newEvents(), changes: newEvents(), groups: newEvents()}
	opts.Logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), lineCore{h.lines}))
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	if opts.SpillDir == "" {
		opts.SpillDir = t.TempDir()
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = 500 * time.Millisecond
	}
	opts.OnNotice = func(n mcptool.Notice) { h.notices.add(n.Message()) }
	opts.OnToolsChanged = func() { h.changes.add("changed") }
	if opts.Launcher == nil {
		opts.Launcher = newLauncher(t, opts.KillGrace, h.groups)
	}
	s, err := mcptool.Start(list, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.s = s
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// launcher starts the stdio servers as services of a real executor (the
// agent's), one owner per test, and records "start <pgid>" and "end <pgid>"
// (no process of the server left) in groups.
type launcher struct {
	ex     *executor.Local
	owner  string
	groups *events
}

func newLauncher(t *testing.T, grace time.Duration, groups *events) *launcher {
	t.Helper()
	ex, err := executor.NewLocal(executor.Options{Limits: executor.Limits{KillGrace: grace}, SpillDir: t.TempDir(), Logger: zaptest.NewLogger(t).Named("executor")})
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the Servers' Close, so it runs after it.
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Errorf("executor Close: %v", err)
		}
	})
	return &launcher{ex: ex, owner: t.Name(), groups: groups}
}

func (l *launcher) Launch(spec mcptool.Launch) (mcptool.Process, error) {
	svc, err := l.ex.StartService(executor.ServiceSpec{Owner: l.owner, Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env, Stderr: spec.Stderr})
	if err != nil {
		return nil, err
	}
	pid := strconv.Itoa(svc.Pid())
	l.groups.add("start " + pid)
	go func() {
		<-svc.Done()
		l.groups.add("end " + pid)
	}()
	return svc, nil
}

// started waits for every server to settle.
func (h *harness) started(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := h.s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) tool(t *testing.T, name string) *mcptool.Tool {
	t.Helper()
	tl, ok := h.s.Lookup(name)
	if !ok {
		t.Fatalf("no tool %q; have %v", name, names(h.s.Tools()))
	}
	return tl
}

func names(ts []*mcptool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// stdio is a server config re-executing the test binary in mode.
func stdio(t *testing.T, name, mode string, env ...mcptool.NameValue) mcptool.ServerConfig {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcptool.ServerConfig{
		Name: name, Transport: mcptool.TransportStdio, Command: self,
		Env: append([]mcptool.NameValue{{Name: testutil.ChildEnv, Value: mode}}, env...),
	}
}

// httpServer serves the test server over streamable HTTP on 127.0.0.1. Its
// events (slow started, saw cancel) and the Authorization header of every
// request are recorded.
func httpServer(t *testing.T) (url string, ev *events) {
	t.Helper()
	ev = newEvents()
	srv := newTestServer(hooks{event: ev.add})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			ev.add("auth: " + a)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, ev
}
