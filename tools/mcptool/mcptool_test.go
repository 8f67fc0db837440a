package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/mcptool"
)

// wantTools is the test server's list, which the SDK sorts by name.
var wantTools = []string{"add_tool", "big", "die", "echo", "env", "fail", "fetch", "rich", "rm", "slow", "spawn", "structured"}

func prefixed(server string, ts ...string) []string {
	var out []string
	for _, t := range ts {
		out = append(out, "mcp__"+server+"__"+t)
	}
	return out
}

func run(ctx context.Context, t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	return tl.Prepare(tools.Caller{SessionID: "s1"}, json.RawMessage(args)).Run(ctx, nil)
}

// TestListAndCall covers both transports: the tool list with the server's
// descriptions and schemas, a call, an isError result, and the editor's
// metadata.
func TestListAndCall(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	for _, tc := range []struct {
		name string
		cfg  mcptool.ServerConfig
	}{
		{"stdio", stdio(t, "local", "serve")},
		{"http", mcptool.ServerConfig{Name: "remote", Transport: mcptool.TransportHTTP, URL: url + "/mcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			h := start(t, []mcptool.ServerConfig{tc.cfg}, mcptool.Options{})
			h.started(ctx, t)
			got := names(h.s.Tools())
			if want := prefixed(tc.cfg.Name, wantTools...); !slices.Equal(got, want) {
				t.Fatalf("tools = %v, want %v", got, want)
			}
			echo := h.tool(t, "mcp__"+tc.cfg.Name+"__echo")
			if echo.Description() != "Echo the text back." || echo.Server() != tc.cfg.Name || echo.ToolName() != "echo" {
				t.Errorf("echo: %q %q %q", echo.Description(), echo.Server(), echo.ToolName())
			}
			var schema map[string]any
			if err := json.Unmarshal(echo.Schema(), &schema); err != nil || schema["type"] != "object" {
				t.Errorf("schema %s: %v", echo.Schema(), err)
			}
			p := echo.Prepare(tools.Caller{SessionID: "s1"}, json.RawMessage(`{"text":"hi"}`))
			want := tools.Call{Title: tc.cfg.Name + `: echo (text: "hi")`, Kind: tools.KindRead,
				Subject: tools.Key("mcp:" + tc.cfg.Name + "/echo")}
			if !reflect.DeepEqual(p.Call, want) {
				t.Errorf("call = %+v, want %+v", p.Call, want)
			}
			r := p.Run(ctx, nil)
			// rawOutput is the tool's result as the server sent it (no
			// structured content here).
			if r.Text != "echo: hi" || r.IsError || rawJSON(r.Raw) != `{"content":[{"type":"text","text":"echo: hi"}]}` || r.Notes != nil {
				t.Errorf("echo = %+v (raw %s)", r, rawJSON(r.Raw))
			}
			r = run(ctx, t, h.tool(t, "mcp__"+tc.cfg.Name+"__fail"), `{}`)
			if r.Text != "Error: boom" || !r.IsError || rawJSON(r.Raw) != `{"content":[{"type":"text","text":"boom"}],"isError":true}` {
				t.Errorf("fail = %+v (raw %s)", r, rawJSON(r.Raw))
			}
			// An object schema without properties gains an empty one.
			if s := string(h.tool(t, "mcp__"+tc.cfg.Name+"__fail").Schema()); s != `{"properties":{},"type":"object"}` {
				t.Errorf("fail schema = %s", s)
			}
			r = run(ctx, t, echo, `[1]`)
			if r.Text != "Error: invalid arguments: expected a JSON object" || !r.IsError || r.Raw != (tools.ErrorOutput{IsError: true}) {
				t.Errorf("bad args = %+v", r)
			}
			if n := h.notices.all(); len(n) != 0 {
				t.Errorf("notices: %q", n)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "k", "serve")}, mcptool.Options{})
	h.started(ctx, t)
	for tool, want := range map[string]string{"echo": "read", "rm": "delete", "fetch": "fetch", "big": "other"} {
		if got := h.tool(t, "mcp__k__"+tool).Kind(); got != want {
			t.Errorf("%s kind = %q, want %q", tool, got, want)
		}
	}
	tl := h.tool(t, "mcp__k__rm")
	if a := tl.Annotations(); !a.Destructive || a.ReadOnly {
		t.Errorf("rm annotations = %+v", a)
	}
	long := `{"path":"` + strings.Repeat("x", 100) + `","n":3,"opts":{"a":1},"list":[1,2]}`
	if got, want := tl.Title(json.RawMessage(long)), `k: rm (path: "`+strings.Repeat("x", 39)+`…", n: 3, opts: {…}, list: […])`; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if got := tl.Title(json.RawMessage(`{}`)); got != "k: rm" {
		t.Errorf("title = %q", got)
	}
}

func TestResultConversion(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "r", "serve")}, mcptool.Options{})
	h.started(ctx, t)

	o := h.tool(t, "mcp__r__rich").Invoke(ctx, nil)
	want := "here it is\n[image: image/png, 12 KB]\n[audio: audio/wav, 300 B]\n" +
		"[resource link: file:///tmp/report.txt (report, text/plain, 2 KB)]\n[resource: mem://note]\na note\n" +
		`{"items":[1,2]}`
	if o.Text != want || o.IsError {
		t.Errorf("rich text =\n%s\nwant\n%s", o.Text, want)
	}
	if string(o.Structured) != `{"items":[1,2]}` {
		t.Errorf("rich structured = %s", o.Structured)
	}
	r := run(ctx, t, h.tool(t, "mcp__r__rich"), `{}`)
	if raw, err := json.Marshal(r.Raw); err != nil || string(raw) != `{"items":[1,2]}` {
		t.Errorf("rich raw output = %s (%v)", raw, err)
	}

	// The SDK server mirrors structured content into a text block; the
	// model gets it once.
	o = h.tool(t, "mcp__r__structured").Invoke(ctx, json.RawMessage(`{}`))
	if o.Text != `{"n":1,"ok":true}` || string(o.Structured) != `{"n":1,"ok":true}` {
		t.Errorf("structured = %+v", o)
	}
}

func TestSpill(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	spill := t.TempDir()
	h := start(t, []mcptool.ServerConfig{stdio(t, "b", "serve")}, mcptool.Options{SpillDir: spill})
	h.started(ctx, t)
	big := h.tool(t, "mcp__b__big")

	r := run(ctx, t, big, `{"n":32000}`)
	if len(r.Text) != 32000 || r.Notes != nil {
		t.Errorf("32000 bytes: len %d notes %q", len(r.Text), r.Notes)
	}

	o := big.Invoke(ctx, json.RawMessage(`{"n":50000}`))
	if !o.Truncated || o.SpillPath == "" {
		t.Fatalf("not spilled: %+v", o.SpillPath)
	}
	full, err := os.ReadFile(o.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 50000 {
		t.Errorf("spill holds %d bytes", len(full))
	}
	note := "\n[output truncated; full output: " + o.SpillPath + "]"
	if !strings.HasSuffix(o.Text, note) || strings.TrimSuffix(o.Text, note) != string(full[50000-32000:]) {
		t.Errorf("text is not the tail plus the note: ...%q", o.Text[len(o.Text)-120:])
	}
	r = run(ctx, t, big, `{"n":50000}`)
	if len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "[output truncated; full output: ") || !strings.HasSuffix(r.Text, "\n"+r.Notes[0]) {
		t.Errorf("notes = %q", r.Notes)
	}
	fi, _ := os.Stat(o.SpillPath)
	di, _ := os.Stat(filepath.Dir(o.SpillPath))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 || filepath.Dir(filepath.Dir(o.SpillPath)) != spill {
		t.Errorf("modes %v %v, dir %s", fi.Mode(), di.Mode(), filepath.Dir(o.SpillPath))
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(o.SpillPath)); !os.IsNotExist(err) {
		t.Errorf("spill dir left after Close: %v", err)
	}
}

// TestSpillParent: the parent is asked for on the first spill only, not at
// start nor for a result that fits; a parent that cannot be had leaves the
// result truncated with the file unavailable.
func TestSpillParent(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	parent := t.TempDir()
	var asked atomic.Int32
	fail := errors.New("no parent")
	h := start(t, []mcptool.ServerConfig{stdio(t, "b", "serve")}, mcptool.Options{SpillParent: func() (string, error) {
		asked.Add(1)
		return parent, nil
	}})
	h.started(ctx, t)
	big := h.tool(t, "mcp__b__big")
	if o := big.Invoke(ctx, json.RawMessage(`{"n":100}`)); o.Truncated || asked.Load() != 0 {
		t.Fatalf("a short result: truncated %v, parent asked %d times", o.Truncated, asked.Load())
	}
	o := big.Invoke(ctx, json.RawMessage(`{"n":50000}`))
	if filepath.Dir(filepath.Dir(o.SpillPath)) != parent || asked.Load() != 1 {
		t.Fatalf("spill %q not under %s (asked %d times)", o.SpillPath, parent, asked.Load())
	}
	if o := big.Invoke(ctx, json.RawMessage(`{"n":50000}`)); filepath.Dir(filepath.Dir(o.SpillPath)) != parent || asked.Load() != 1 {
		t.Errorf("second spill %q, parent asked %d times", o.SpillPath, asked.Load())
	}

	h2 := start(t, []mcptool.ServerConfig{stdio(t, "b", "serve")}, mcptool.Options{SpillParent: func() (string, error) { return "", fail }})
	h2.started(ctx, t)
	o = h2.tool(t, "mcp__b__big").Invoke(ctx, json.RawMessage(`{"n":50000}`))
	if !o.Truncated || o.SpillPath != "" || !strings.HasSuffix(o.Text, "[output truncated; full output: (unavailable)]") {
		t.Errorf("parent unavailable: truncated %v, path %q, text ...%q", o.Truncated, o.SpillPath, o.Text[len(o.Text)-60:])
	}
}

// TestListChanged: a tool the server adds joins the list (for the next
// request) under both protocol generations the SDK speaks.
func TestListChanged(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	for _, version := range []string{"", "2025-06-18"} {
		for _, tc := range []struct {
			name string
			cfg  mcptool.ServerConfig
		}{
			{"stdio", stdio(t, "lc", "serve")},
			{"http", mcptool.ServerConfig{Name: "lc", Transport: mcptool.TransportHTTP, URL: url}},
		} {
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				ctx := testutil.Context(t)
				opts := mcptool.Options{}
				mcptool.SetProtocolVersion(&opts, version)
				h := start(t, []mcptool.ServerConfig{tc.cfg}, opts)
				h.started(ctx, t)
				if slices.Contains(names(h.s.Tools()), "mcp__lc__extra") && tc.name == "stdio" {
					t.Fatal("extra listed before it was added")
				}
				before := h.changes.count("changed")
				if r := run(ctx, t, h.tool(t, "mcp__lc__add_tool"), `{}`); r.Text != "added" {
					t.Fatalf("add_tool = %+v", r)
				}
				for !slices.Contains(names(h.s.Tools()), "mcp__lc__extra") {
					waitMore(ctx, t, h.changes, before)
					before = h.changes.count("changed")
				}
				if r := run(ctx, t, h.tool(t, "mcp__lc__extra"), `{}`); r.Text != "extra ran" {
					t.Errorf("extra = %+v", r)
				}
			})
		}
	}
}

// waitMore waits until ev has more than n "changed" events.
func waitMore(ctx context.Context, t *testing.T, ev *events, n int) {
	t.Helper()
	for ev.count("changed") <= n {
		ev.mu.Lock()
		ch := ev.changed
		ev.mu.Unlock()
		if ev.count("changed") > n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("timed out waiting for a tools change")
		}
	}
}

func TestFailedStarts(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{
		stdio(t, "crash", "fail"),
		{Name: "missing", Transport: mcptool.TransportStdio, Command: "no-such-mcp-server-xyz"},
		{Name: "old", Transport: mcptool.TransportSSE, URL: "http://127.0.0.1:1/sse"},
		{Name: "nowhere", Transport: mcptool.TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
		stdio(t, "ok", "serve"),
		stdio(t, "ok", "serve"),
	}, mcptool.Options{})
	h.started(ctx, t)
	crash := h.notices.wait(ctx, t, `"crash"`)
	if !strings.HasPrefix(crash, `MCP server "crash" failed to start: `) || !strings.Contains(crash, "bad config: no database") {
		t.Errorf("crash notice = %q", crash)
	}
	if n := h.notices.wait(ctx, t, `"missing"`); n != `MCP server "missing" failed to start: command "no-such-mcp-server-xyz" not found in PATH` {
		t.Errorf("missing notice = %q", n)
	}
	if n := h.notices.wait(ctx, t, `"old"`); !strings.Contains(n, "SSE transport is deprecated") {
		t.Errorf("sse notice = %q", n)
	}
	if n := h.notices.wait(ctx, t, `"nowhere"`); !strings.HasPrefix(n, `MCP server "nowhere" failed to start: `) {
		t.Errorf("http notice = %q", n)
	}
	if n := h.notices.wait(ctx, t, `"ok"`); n != `MCP server "ok" failed to start: another server of the session has the same name` {
		t.Errorf("dup notice = %q", n)
	}
	if got := len(h.notices.all()); got != 5 {
		t.Errorf("%d notices: %q", got, h.notices.all())
	}
	// The session works without them.
	if r := run(ctx, t, h.tool(t, "mcp__ok__echo"), `{"text":"x"}`); r.Text != "echo: x" {
		t.Errorf("echo = %+v", r)
	}
	// A call to a failed server's tool names it.
	tl, ok := h.s.Lookup("mcp__crash__anything")
	if !ok {
		t.Fatal("lookup of a failed server's tool")
	}
	if r := run(ctx, t, tl, `{}`); !r.IsError || !strings.HasPrefix(r.Text, `Error: MCP server "crash" failed to start: `) {
		t.Errorf("call = %+v", r)
	}
	if _, ok := h.s.Lookup("mcp__other__echo"); ok {
		t.Error("lookup of another server's name succeeded")
	}
	for _, st := range h.s.Status() {
		if want := mcptool.Failed; st.Name != "ok" && st.State != want {
			t.Errorf("%s state %v", st.Name, st.State)
		}
	}
}

func TestStartTimeout(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "sleepy", "slowstart"), stdio(t, "quick", "serve")},
		mcptool.Options{StartTimeout: 2 * time.Second})
	// Tools of a quick server are there before the slow one settles.
	h.changes.wait(ctx, t, "changed")
	if got := names(h.s.Tools()); len(got) != len(wantTools) || !strings.HasPrefix(got[0], "mcp__quick__") {
		t.Errorf("tools while sleepy starts: %v", got)
	}
	if st := h.s.Status()[0]; st.State != mcptool.Starting || st.Pgid == 0 {
		t.Errorf("sleepy while quick is ready: %+v", st)
	}
	// A call while it starts waits for the start, and fails with it.
	if r := run(ctx, t, h.tool(t, "mcp__sleepy__echo"), `{"text":"hi"}`); !r.IsError || !strings.Contains(r.Text, `MCP server "sleepy" failed to start: no answer within 2s`) {
		t.Errorf("call while sleepy starts = %+v", r)
	}
	n := h.notices.wait(ctx, t, `"sleepy"`)
	if n != `MCP server "sleepy" failed to start: no answer within 2s (stderr: event: sleeping)` {
		t.Errorf("notice = %q", n)
	}
	pgid, _ := strconv.Atoi(strings.TrimPrefix(h.groups.wait(ctx, t, "end "), "end "))
	if pgid == 0 || !testutil.GroupGone(pgid) {
		t.Errorf("sleepy group %d not gone (%q)", pgid, h.groups.all())
	}
}

// TestCancel: cancelling the ctx returns at once and the server sees
// notifications/cancelled, on both transports.
func TestCancel(t *testing.T) {
	t.Parallel()
	url, httpEv := httpServer(t)
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{
		stdio(t, "s", "serve"),
		{Name: "h", Transport: mcptool.TransportHTTP, URL: url},
	}, mcptool.Options{})
	h.started(ctx, t)
	for _, tc := range []struct {
		server string
		ev     *events
	}{{"s", h.lines}, {"h", httpEv}} {
		callCtx, cancel := context.WithCancel(ctx)
		done := make(chan tools.Result, 1)
		go func() { done <- run(callCtx, t, h.tool(t, "mcp__"+tc.server+"__slow"), `{}`) }()
		tc.ev.wait(ctx, t, "slow started")
		cancel()
		at := time.Now()
		select {
		case r := <-done:
			if r.Text != "Error: MCP tool call aborted" || !r.IsError {
				t.Errorf("%s: cancelled call = %+v", tc.server, r)
			}
			if d := time.Since(at); d > 500*time.Millisecond {
				t.Errorf("%s: returned %v after cancel", tc.server, d)
			}
		case <-ctx.Done():
			t.Fatal("call did not return")
		}
		tc.ev.wait(ctx, t, "saw cancel")
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "t", "serve")}, mcptool.Options{CallTimeout: 300 * time.Millisecond})
	h.started(ctx, t)
	r := run(ctx, t, h.tool(t, "mcp__t__slow"), `{}`)
	if r.Text != `Error: MCP server "t" did not answer within 300ms` || !r.IsError {
		t.Errorf("timeout = %+v", r)
	}
	h.lines.wait(ctx, t, "saw cancel")
}

func TestDiesMidCall(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "d", "serve")}, mcptool.Options{})
	h.started(ctx, t)
	echo := h.tool(t, "mcp__d__echo")
	r := run(ctx, t, h.tool(t, "mcp__d__die"), `{}`)
	if !r.IsError || !strings.HasPrefix(r.Text, `Error: MCP server "d" died: `) || !strings.Contains(r.Text, "exit status 3") {
		t.Errorf("die = %+v", r)
	}
	n := h.notices.wait(ctx, t, `"d"`)
	if !strings.HasPrefix(n, `MCP server "d" died: `) || !strings.Contains(n, "dying now") {
		t.Errorf("notice = %q", n)
	}
	if got := h.s.Tools(); len(got) != 0 {
		t.Errorf("dead server's tools still offered: %v", names(got))
	}
	// A tool value the model saw before the death fails naming the server.
	if r := run(ctx, t, echo, `{"text":"x"}`); !strings.HasPrefix(r.Text, `Error: MCP server "d" died: `) {
		t.Errorf("echo after death = %+v", r)
	}
	h.groups.wait(ctx, t, "end ")
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if c := len(h.notices.all()); c != 1 {
		t.Errorf("%d notices: %q", c, h.notices.all())
	}
}

// TestSessionsApart: two Servers with different servers see only their own.
func TestSessionsApart(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	ctx := testutil.Context(t)
	a := start(t, []mcptool.ServerConfig{stdio(t, "alpha", "serve")}, mcptool.Options{})
	b := start(t, []mcptool.ServerConfig{{Name: "beta", Transport: mcptool.TransportHTTP, URL: url}}, mcptool.Options{})
	a.started(ctx, t)
	b.started(ctx, t)
	for _, tl := range a.s.Tools() {
		if !strings.HasPrefix(tl.Name(), "mcp__alpha__") {
			t.Errorf("a has %s", tl.Name())
		}
	}
	for _, tl := range b.s.Tools() {
		if !strings.HasPrefix(tl.Name(), "mcp__beta__") {
			t.Errorf("b has %s", tl.Name())
		}
	}
	if _, ok := a.s.Lookup("mcp__beta__echo"); ok {
		t.Error("a finds b's tool")
	}
	if _, ok := b.s.Lookup("mcp__alpha__echo"); ok {
		t.Error("b finds a's tool")
	}
}

// TestEnvironment: a stdio server gets the base names and its configured
// variables, credentials included, and nothing else of ours.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	base := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "DSH_API_KEY=sk-agent", "OTHER=1", "LANG=C.UTF-8"}
	h := start(t, []mcptool.ServerConfig{stdio(t, "e", "serve",
		mcptool.NameValue{Name: "GITHUB_TOKEN", Value: "ghp_x"}, mcptool.NameValue{Name: "HOME", Value: "/override"})},
		mcptool.Options{BaseEnv: base})
	h.started(ctx, t)
	r := run(ctx, t, h.tool(t, "mcp__e__env"), `{}`)
	want := []string{testutil.ChildEnv + "=serve", "GITHUB_TOKEN=ghp_x", "HOME=/override", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"}
	// The launcher (the executor) adds the service's marker, by which it
	// finds what the server started that left its session.
	var got, markers []string
	for _, kv := range strings.Split(r.Text, "\n") {
		if strings.HasPrefix(kv, "DSH_ACP_SVC_") {
			markers = append(markers, kv)
			continue
		}
		got = append(got, kv)
	}
	if !slices.Equal(got, want) || len(markers) != 1 {
		t.Errorf("env = %q, want %q and one service marker", r.Text, want)
	}
}

// TestCloseKillsGroup: Close leaves no process, grandchildren and servers
// that ignore SIGTERM included.
func TestCloseKillsGroup(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "p", "serve"), stdio(t, "stubborn", "ignore-term")},
		mcptool.Options{KillGrace: 300 * time.Millisecond})
	h.started(ctx, t)
	var grandchildren []int
	for _, srv := range []string{"p", "stubborn"} {
		r := run(ctx, t, h.tool(t, "mcp__"+srv+"__spawn"), `{}`)
		pid, err := strconv.Atoi(r.Text)
		if err != nil {
			t.Fatalf("spawn = %+v", r)
		}
		grandchildren = append(grandchildren, pid)
	}
	groups := h.s.Groups()
	if len(groups) != 2 {
		t.Fatalf("groups = %v", groups)
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if !testutil.GroupGone(g) {
			t.Errorf("group %d survives Close", g)
		}
		h.groups.wait(ctx, t, "end "+strconv.Itoa(g))
	}
	for _, pid := range grandchildren {
		if !testutil.Gone(pid) {
			t.Errorf("grandchild %d survives Close", pid)
		}
	}
	if n := h.notices.all(); len(n) != 0 {
		t.Errorf("Close produced notices: %q", n)
	}
	if r := run(ctx, t, h.tool(t, "mcp__p__echo"), `{}`); !r.IsError {
		t.Errorf("call after Close = %+v", r)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	url, ev := httpServer(t)
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{{Name: "auth", Transport: mcptool.TransportHTTP, URL: url,
		Headers: []mcptool.NameValue{{Name: "Authorization", Value: "Bearer t0k"}}}}, mcptool.Options{})
	h.started(ctx, t)
	if got := ev.wait(ctx, t, "auth: "); got != "auth: Bearer t0k" {
		t.Errorf("header = %q", got)
	}
}

func TestStartNeedsCwd(t *testing.T) {
	t.Parallel()
	_, err := mcptool.Start([]mcptool.ServerConfig{{Name: "x", Transport: mcptool.TransportStdio, Command: "true"}}, mcptool.Options{Cwd: "rel"})
	if err == nil {
		t.Fatal("relative cwd accepted")
	}
}

// TestCloseDuringCall: Close does not wait for a call in flight; the call
// ends with an error naming the server.
func TestCloseDuringCall(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	h := start(t, []mcptool.ServerConfig{stdio(t, "c", "serve")}, mcptool.Options{})
	h.started(ctx, t)
	done := make(chan tools.Result, 1)
	go func() { done <- run(ctx, t, h.tool(t, "mcp__c__slow"), `{}`) }()
	h.lines.wait(ctx, t, "slow started")
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !r.IsError || !strings.Contains(r.Text, `MCP server "c"`) {
			t.Errorf("call = %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("call outlived Close")
	}
}

// rawJSON is a Result's Raw as JSON text.
func rawJSON(raw any) string {
	b, err := json.Marshal(raw)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// A call to a tool of a server still starting (a prompt sent right after
// session/new) waits for the start instead of failing.
func TestCallWaitsForStart(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	gate := filepath.Join(t.TempDir(), "gate")
	if err := unix.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	h := start(t, []mcptool.ServerConfig{stdio(t, "g", "gated", mcptool.NameValue{Name: "MCP_GATE", Value: gate})}, mcptool.Options{})
	h.lines.wait(ctx, t, "event: gated")
	if st := h.s.Status()[0]; st.State != mcptool.Starting {
		t.Fatalf("state %v, want starting", st.State)
	}
	tl := h.tool(t, "mcp__g__echo")
	done := make(chan tools.Result, 1)
	go func() { done <- run(ctx, t, tl, `{"text":"hi"}`) }()
	// Open the gate: the server starts serving.
	w, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	select {
	case r := <-done:
		if r.IsError || r.Text != "echo: hi" {
			t.Errorf("call made while the server started = %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("the call did not return")
	}
}
