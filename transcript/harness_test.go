package transcript_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

// Bounds. Every wait in a scenario is event-driven; these only turn a hang
// into a readable failure.
const (
	scenarioTimeout = 30 * time.Second
	exitTimeout     = 15 * time.Second
	goneTimeout     = 10 * time.Second // SIGTERM, then SIGKILL after the 3s grace
	exitGrace       = time.Second      // after the binary exited
	pollInterval    = 10 * time.Millisecond
)

// harness runs one scenario against one dsh-acp process.
type harness struct {
	t    *testing.T
	sc   *scenario
	root string
	ctx  context.Context
	// writesFiles: the client last initialized offering
	// fs/write_text_file, and answers it (see writeTextFile).
	writesFiles atomic.Bool

	cmd        *exec.Cmd
	exited     chan struct{}
	exitCode   int // valid once exited is closed
	scriptPath string
	extraFlags []string
	stderr     lockedBuffer
	// clientLog collects the JSON-RPC client's own complaints.
	clientLog lockedBuffer
	logPath   string
	record    string
	tracker   *tracker
	// tokens are the DSH_TRANSCRIPT_RUN values of every binary started,
	// in order (a restart starts another): what marks the scenario's
	// processes in /proc.
	tokens   []string
	logCopy  *logCopier
	exitSeen bool // an expect_exit step checked the exit

	wire *wire
	in   *teeWriter
	conn *jsonrpc2.Conn

	nextID   uint64
	sessions map[string]string       // alias → session id
	calls    map[string]*pendingCall // step id → request in flight
	cursors  map[string]int          // await_update position per session

	// permMu guards answers and asked: answers queued by permission steps
	// and session/request_permission requests still waiting for one.
	permMu  sync.Mutex
	answers []permAnswer
	asked   []*jsonrpc2.Request
}

type permAnswer struct {
	method  string // the request it answers
	session string // session id, "" = any
	answer  string
	values  json.RawMessage // an accepted elicitation's content
}

type pendingCall struct {
	method string
	w      jsonrpc2.Waiter
	done   bool
	result json.RawMessage
	err    error
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start launches the binary for sc under root and connects the client.
func start(t *testing.T, ctx context.Context, sc *scenario, root string) *harness {
	t.Helper()
	h := &harness{
		t: t, sc: sc, root: root, ctx: ctx,
		exited:   make(chan struct{}),
		logPath:  filepath.Join(root, "dsh-acp.log"),
		record:   filepath.Join(root, "model-requests.jsonl"),
		wire:     newWire(),
		nextID:   1, // id 0 would collide with null ids, which the client reads as 0
		sessions: map[string]string{},
		calls:    map[string]*pendingCall{},
		cursors:  map[string]int{},
	}
	for _, d := range []string{"tmp", "home"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// $TMP/mcp-server is this test binary, an MCP server over stdio when
	// its environment says so (see mcpMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(root, "mcp-server")); err != nil {
		t.Fatal(err)
	}
	for name, data := range sc.files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scriptPath := filepath.Join(root, "script.jsonl")
	if err := os.WriteFile(scriptPath, sc.script, 0o644); err != nil {
		t.Fatal(err)
	}
	h.scriptPath = scriptPath
	lc, err := startLogCopy(h.logPath, filepath.Join(root, logCopyName))
	if err != nil {
		t.Fatal(err)
	}
	h.logCopy = lc
	t.Cleanup(lc.close)
	if sc.models != nil {
		// A real endpoint on 127.0.0.1 for the model list; the turns still
		// come from the script.
		body := sc.models
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if string(body) == "404" || r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		h.extraFlags = []string{"--base-url=" + srv.URL + "/v1"}
	}
	h.spawn()
	return h
}

// spawn starts the binary and connects a client; a restart step calls it
// again on the same $TMP (and so the same state directory, under HOME).
func (h *harness) spawn() {
	t, root, scriptPath, sc := h.t, h.root, h.scriptPath, h.sc
	h.exited = make(chan struct{})
	token := randomToken()
	h.tokens = append(h.tokens, token)
	// --sandbox off unless a scenario says otherwise: the modes a session
	// offers must not depend on the kernel the goldens are run on.
	args := append([]string{"--script", scriptPath, "--script-record", h.record, "--log-file", h.logPath, "--log-level", "debug", "--sandbox=off"}, append(sc.flags, h.extraFlags...)...)
	var dockerEnv []string
	if os.Getenv(testExecutorEnv) == "docker" || sc.dockerHost != "" {
		// The test engine (.ci/docker-up) and its image.
		e := dockertest.Need(t)
		host := e.Host
		if sc.dockerHost != "" {
			host = sc.dockerHost
		}
		dockerEnv = []string{"DOCKER_HOST=" + host, "DSH_DOCKER_IMAGE=" + e.Image, testExecutorEnv + "=docker"}
		if sc.dockerHost != "" && !dockertest.Required() {
			// Not built beside the binary by TestMain.
			args = append(args, "--docker-helper", dockertest.Helper(t))
		}
		// Scenarios read the harness's files under $TMP (gates, the log
		// copy) and name workdirs outside the session's: the containers
		// see $TMP, read-only but for the session's directory.
		args = append(args, "--docker-read", root)
	}
	h.cmd = exec.Command(binPath, args...)
	h.cmd.Dir = root
	// No API key of any name; spill files land under $TMP/tmp.
	h.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"),
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"LANG=C.UTF-8",
		"DSH_TRANSCRIPT_RUN=" + token,
		"GORACE=halt_on_error=1",
	}
	if v := os.Getenv(testExecutorEnv); v != "" && sc.dockerHost == "" {
		// The binary confines every command (see sandboxedRun).
		h.cmd.Env = append(h.cmd.Env, testExecutorEnv+"="+v)
	}
	h.cmd.Env = append(h.cmd.Env, dockerEnv...)
	// The binary dies with the test process whatever happens.
	h.cmd.SysProcAttr = dieWithParent()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = inR, outW, &h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	cmd, exited := h.cmd, h.exited
	go func() {
		err := cmd.Wait()
		// Read only after exited is closed, which orders it.
		h.exitCode = cmd.ProcessState.ExitCode()
		if err != nil && h.exitCode == 0 {
			h.exitCode = -1
		}
		close(exited)
	}()
	h.tracker = newTracker(h.cmd.Process.Pid, token)
	startTracking(h.tracker)

	h.in = &teeWriter{wire: h.wire, w: inW}
	stream := &stdio{teeReader: &teeReader{wire: h.wire, r: outR}, teeWriter: h.in}
	h.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(stream), h, jsonrpc2.SetLogger(log.New(&h.clientLog, "client: ", 0)))
}

func randomToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Handle answers the agent's requests. It runs on the client's read loop,
// so it never blocks: a permission request with no queued answer waits in
// h.asked until a permission step supplies one.
func (h *harness) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		return // session/update: the wire record has it
	}
	if req.Method == "fs/read_text_file" {
		h.readTextFile(ctx, conn, req)
		return
	}
	if req.Method == "fs/write_text_file" && h.writesFiles.Load() {
		h.writeTextFile(ctx, conn, req)
		return
	}
	if req.Method != "session/request_permission" && req.Method != "elicitation/create" {
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "the transcript client does not offer " + req.Method})
		return
	}
	h.permMu.Lock()
	h.asked = append(h.asked, req)
	h.permMu.Unlock()
	h.answerPermissions(conn)
}

// readTextFile answers fs/read_text_file from the scenario's editor
// buffers, as an editor serves an unsaved buffer; any other path is an
// error, so the agent's own way of reading files shows.
func (h *harness) readTextFile(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var p struct {
		Path string `json:"path"`
	}
	if req.Params != nil {
		_ = json.Unmarshal(*req.Params, &p)
	}
	rel, err := filepath.Rel(h.root, p.Path)
	if buf, ok := h.sc.editor[filepath.ToSlash(rel)]; err == nil && ok {
		_ = conn.Reply(ctx, req.ID, map[string]any{"content": string(buf)})
		return
	}
	if h.writesFiles.Load() && err == nil && !strings.HasPrefix(rel, "..") {
		// A client that writes files (Zed) opens one it has no buffer
		// of from disk.
		if data, err := os.ReadFile(p.Path); err == nil {
			_ = conn.Reply(ctx, req.ID, map[string]any{"content": string(data)})
			return
		}
	}
	_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: -32002, Message: "not open in the editor: " + p.Path})
}

// writeTextFile answers fs/write_text_file as Zed does: the buffer gets the
// content and is saved, so the file on disk has it when the reply goes.
// Only under $TMP; the harness writes nothing else.
func (h *harness) writeTextFile(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var p struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if req.Params != nil {
		_ = json.Unmarshal(*req.Params, &p)
	}
	rel, err := filepath.Rel(h.root, p.Path)
	if err != nil || strings.HasPrefix(rel, "..") || !filepath.IsAbs(p.Path) {
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: -32002, Message: "outside the scenario: " + p.Path})
		return
	}
	err = os.MkdirAll(filepath.Dir(p.Path), 0o755)
	if err == nil {
		err = os.WriteFile(p.Path, []byte(p.Content), 0o644)
	}
	if err != nil {
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: -32603, Message: err.Error()})
		return
	}
	if h.sc.editor == nil {
		h.sc.editor = map[string][]byte{}
	}
	h.sc.editor[filepath.ToSlash(rel)] = []byte(p.Content)
	_ = conn.Reply(ctx, req.ID, nil)
}

func sessionOf(req *jsonrpc2.Request) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if req.Params != nil {
		_ = json.Unmarshal(*req.Params, &p)
	}
	return p.SessionID
}

// answerPermissions pairs waiting requests with queued answers, in order.
func (h *harness) answerPermissions(conn *jsonrpc2.Conn) {
	type reply struct {
		id jsonrpc2.ID
		permAnswer
	}
	var replies []reply
	h.permMu.Lock()
	for i := 0; i < len(h.asked); {
		req := h.asked[i]
		sid := sessionOf(req)
		j := -1
		for k, a := range h.answers {
			if a.method == req.Method && (a.session == "" || a.session == sid) {
				j = k
				break
			}
		}
		if j < 0 {
			i++
			continue
		}
		replies = append(replies, reply{req.ID, h.answers[j]})
		h.answers = append(h.answers[:j], h.answers[j+1:]...)
		h.asked = append(h.asked[:i], h.asked[i+1:]...)
	}
	h.permMu.Unlock()
	for _, r := range replies {
		if r.method == "elicitation/create" && r.answer == "error" {
			// An editor that fails to show the form answers with an error.
			if err := conn.ReplyWithError(context.Background(), r.id, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "the form could not be shown"}); err != nil {
				h.t.Errorf("reply to elicitation/create: %v", err)
			}
			continue
		}
		if r.method == "elicitation/create" {
			res := map[string]any{"action": r.answer}
			if r.answer == "accept" && r.values != nil {
				res["content"] = r.values
			}
			if err := conn.Reply(context.Background(), r.id, res); err != nil {
				h.t.Errorf("reply to elicitation/create: %v", err)
			}
			continue
		}
		var outcome any
		if r.answer == "cancelled" {
			outcome = map[string]any{"outcome": "cancelled"}
		} else {
			outcome = map[string]any{"outcome": "selected", "optionId": r.answer}
		}
		if err := conn.Reply(context.Background(), r.id, map[string]any{"outcome": outcome}); err != nil {
			h.t.Errorf("reply to session/request_permission: %v", err)
		}
	}
}
