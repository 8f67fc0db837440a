package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/openai"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// The cases, each in a process of its own (a helper child) so its
// peak RSS is its own: six 7 MB screenshots pasted one prompt after
// another (every request carried every image of the session again), and
// eight 11 MB images one MCP tool call returned. The peak is measured from
// the conversation as the session holds it, through every request sent;
// it must stay within 100 MiB + 4× the largest request (not under the race
// detector, whose shadow memory is RSS too). What sending allocates is
// measured either way: no image is copied to send it.
func TestImageRequestsMemoryBounded(t *testing.T) {
	// Not parallel: it measures memory and moves hundreds of MB.
	if testing.Short() {
		t.Skip("moves hundreds of MB")
	}
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from Linux's /proc/self/status")
	}
	for _, c := range []string{"prompts", "mcp"} {
		t.Run(c, func(t *testing.T) {
			ctx := testutil.WithTimeout(t, 120*time.Second)
			cmd := testutil.Child(t, ctx, "imagemem")
			cmd.Env = append(cmd.Env, "DSH_IMAGEMEM_CASE="+c)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			var rep imageMemReport
			if err := json.Unmarshal(out, &rep); err != nil || rep.Err != "" {
				t.Fatalf("child report %q: %v %s", out, err, rep.Err)
			}
			t.Logf("%s: %d requests, largest %d KiB, %d KiB allocated to send them; RSS %d KiB before them, peak %d KiB",
				c, rep.Requests, rep.LargestKiB, rep.AllocKiB, rep.BaseKiB, rep.PeakKiB)
			if rep.AllocKiB > 4<<10 {
				t.Errorf("sending allocated %d KiB, want at most 4 MiB (the images are not copied)", rep.AllocKiB)
			}
			if limit := 100<<10 + 4*rep.LargestKiB; !raceEnabled && rep.PeakKiB > limit {
				t.Errorf("peak RSS %d KiB, over 100 MiB + 4× the largest request (%d KiB)", rep.PeakKiB, limit)
			}
		})
	}
}

type imageMemReport struct {
	Requests   int
	LargestKiB int64
	AllocKiB   int64
	BaseKiB    int64
	PeakKiB    int64
	Err        string
}

// bigImage is an image of n decoded bytes, its base64 made without
// encoding anything (nothing on the way compresses it).
func bigImage(n int, name string) agent.Image {
	return agent.Image{MimeType: "image/png", Data: strings.Repeat("QUJD", n/3), Name: name}
}

func imageMemChild() int {
	var rep imageMemReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	var largest atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n > largest.Load() {
			largest.Store(n)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\n"+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "test-model", MaxRetries: -1})
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	ctx := context.Background()
	system := agent.Message{Role: agent.RoleSystem, Content: "You are a test."}
	send := func(history []agent.Message) bool {
		// As a turn builds its request (agent.turn.request).
		req := agent.Request{Messages: agent.BoundImages(append([]agent.Message{system}, history...))}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := p.Stream(ctx, req, func(agent.Delta) {})
		runtime.ReadMemStats(&after)
		if err != nil {
			rep.Err = err.Error()
			return false
		}
		// The fake endpoint's side of it is in the same process: it
		// reads into io.Discard's pool, a few KiB.
		rep.AllocKiB += int64(after.TotalAlloc-before.TotalAlloc) >> 10
		rep.Requests++
		return true
	}
	settle := func() {
		runtime.GC()
		debug.FreeOSMemory()
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		rep.BaseKiB = proctab.SelfStatusKiB("VmRSS")
	}
	var history []agent.Message
	switch os.Getenv("DSH_IMAGEMEM_CASE") {
	case "prompts":
		settle()
		for i := range 6 {
			img := bigImage(7<<20, fmt.Sprintf("screenshot-%d.png", i+1))
			// As the session keeps its history (sessions.Session.Finish).
			history = agent.BoundImages(append(history, agent.Message{Role: agent.RoleUser, Content: "what is on this screen?", Images: []agent.Image{img}}))
			if !send(history) {
				return 0
			}
			history = append(history, agent.Message{Role: agent.RoleAssistant, Content: "ok"})
		}
	case "mcp":
		tool := agent.Message{Role: agent.RoleTool, ToolCallID: "call-1", Content: "8 images"}
		for i := range 8 {
			tool.Images = append(tool.Images, bigImage(11<<20, fmt.Sprintf("shot result image %d", i+1)))
		}
		// As the turn keeps the tool's answer (agent.turn.answer).
		tool = agent.BoundImages([]agent.Message{tool})[0]
		history = []agent.Message{
			{Role: agent.RoleUser, Content: "take the screenshots"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call-1", Name: "shot", Arguments: "{}"}}},
			tool,
		}
		settle()
		for range 2 {
			if !send(history) {
				return 0
			}
			history = append(history, agent.Message{Role: agent.RoleAssistant, Content: "ok"}, agent.Message{Role: agent.RoleUser, Content: "and now?"})
		}
	default:
		rep.Err = "unknown case"
		return 0
	}
	rep.PeakKiB = proctab.SelfStatusKiB("VmHWM")
	rep.LargestKiB = largest.Load() >> 10
	return 0
}

// The images are streamed into the body, not encoded with it: what the
// endpoint gets is the same JSON, on a retry too (the body is read again
// from its start), and an image whose data is not plain base64 (a client
// sent it) is escaped, never a break in the JSON.
func TestImagesStreamedIntoTheBody(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusInternalServerError)
			return
		}
		sse(w, chunk(`{"content":"ok"}`, "stop"), done)
	})
	p := f.provider(t, nil)
	plain := base64.StdEncoding.EncodeToString([]byte("a png, honestly"))
	odd := `not"base64\` + "\n"
	req := agent.Request{Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "look", Images: []agent.Image{{MimeType: "image/png", Data: plain}}},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "shot", Arguments: "{}"}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "1 image", Images: []agent.Image{{MimeType: "image/jpeg", Data: odd}}},
	}}
	if _, err := p.Stream(testutil.Context(t), req, func(agent.Delta) {}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (one retry)", len(reqs))
	}
	for i, r := range reqs {
		var urls []string
		for _, m := range r.Body["messages"].([]any) {
			parts, _ := m.(map[string]any)["content"].([]any)
			for _, part := range parts {
				if u, ok := part.(map[string]any)["image_url"].(map[string]any); ok {
					urls = append(urls, u["url"].(string))
				}
			}
		}
		want := []string{"data:image/png;base64," + plain, "data:image/jpeg;base64," + odd}
		if fmt.Sprint(urls) != fmt.Sprint(want) {
			t.Errorf("request %d: image URLs %q, want %q", i, urls, want)
		}
	}
}
