package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hooks let the in-process (HTTP) server tell its test what happened; the
// stdio server writes the same events to its stderr instead.
type hooks struct {
	event func(string)
}

// newTestServer builds the MCP server both transports serve. Its tools:
//   - echo {text}: "echo: <text>", annotated read-only;
//   - fail: an isError result "boom";
//   - slow: "slow started" event, then blocks until cancelled ("saw cancel");
//   - die: exits the process with status 3 (stdio only);
//   - rich: text, a 12 KB PNG, audio, a resource link, an embedded text
//     resource and structured content;
//   - structured: only structured content {"n":1,"ok":true};
//   - big {n}: n bytes of text;
//   - add_tool: adds tool "extra" (a tools/list_changed);
//   - env: the process environment, sorted, one per line;
//   - spawn: starts a sleeping grandchild in the group and returns its pid;
//   - rm {path}: annotated destructive; fetch {url}: open-world.
func newTestServer(h hooks) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "dsh-test-server", Version: "1"}, nil)
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	args := func(req *mcp.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: obj(`"text":{"type":"string"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("echo: %v", args(req)["text"])), nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("boom")
			r.IsError = true
			return r, nil
		})
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Blocks until cancelled.", InputSchema: obj("")},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.event("slow started")
			<-ctx.Done()
			h.event("saw cancel")
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "die", Description: "Exits.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "dying now")
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "rich", Description: "Every kind of content.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			size := int64(2048)
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: "here it is"},
					&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 12*1024)},
					&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 300)},
					&mcp.ResourceLink{URI: "file:///tmp/report.txt", Name: "report", MIMEType: "text/plain", Size: &size},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://note", MIMEType: "text/plain", Text: "a note"}},
				},
				StructuredContent: map[string]any{"items": []any{1, 2}},
			}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "structured", Description: "Structured only.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"n": 1, "ok": true}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "big", Description: "n bytes of text.", InputSchema: obj(`"n":{"type":"integer"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n, _ := args(req)["n"].(float64)
			var b strings.Builder
			for i := 0; b.Len() < int(n); i++ {
				fmt.Fprintf(&b, "line %06d\n", i)
			}
			return text(b.String()[:int(n)]), nil
		})
	srv.AddTool(&mcp.Tool{Name: "add_tool", Description: "Adds tool extra.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv.AddTool(&mcp.Tool{Name: "extra", Description: "Added later.", InputSchema: obj("")},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("extra ran"), nil
				})
			return text("added"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "env", Description: "The environment.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return text(strings.Join(env, "\n")), nil
		})
	srv.AddTool(&mcp.Tool{Name: "spawn", Description: "Starts a grandchild.", InputSchema: obj("")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			self, _ := os.Executable()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), testutil.ChildEnv+"=sleeper")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			return text(strconv.Itoa(cmd.Process.Pid)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "rm", Description: "Removes.", InputSchema: obj(`"path":{"type":"string"}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("removed"), nil })
	srv.AddTool(&mcp.Tool{Name: "fetch", Description: "Fetches.", InputSchema: obj(`"url":{"type":"string"}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("fetched"), nil })
	return srv
}

func ptr[T any](v T) *T { return &v }

// childMain is the re-executed test binary: an MCP server over stdio, or
// one of the misbehaving variants. It returns the exit code.
func childMain(mode string) int {
	stderrEvent := hooks{event: func(s string) { fmt.Fprintln(os.Stderr, "event: "+s) }}
	switch mode {
	case "serve", "ask":
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "fail":
		fmt.Fprintln(os.Stderr, "bad config: no database")
		return 1
	case "slowstart":
		fmt.Fprintln(os.Stderr, "event: sleeping")
		select {}
	case "sleeper":
		select {}
	case "gated":
		// Starts serving only once the test opens the FIFO in MCP_GATE for
		// writing: a server still starting, for as long as the test wants.
		fmt.Fprintln(os.Stderr, "event: gated")
		f, err := os.Open(os.Getenv("MCP_GATE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gate:", err)
			return 1
		}
		f.Close()
	default:
		return 2
	}
	fmt.Fprintln(os.Stderr, "event: serving")
	srv := newTestServer(stderrEvent)
	if mode == "ask" {
		addAskTools(srv)
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
	}
	return 0
}

// addAskTools adds the tools that ask the user (elicitation), each as
// one protocol generation does:
//   - ask_new: answers its first call with an input request (MCP
//     2026-07-28), and what it heard once called again with the answer;
//   - ask_old: sends elicitation/create itself while serving the call (the
//     protocols before; refused by the SDK on 2026-07-28).
func addAskTools(srv *mcp.Server) {
	form := &mcp.ElicitParams{Mode: "form", Message: "Sure?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"sure":{"type":"boolean"}},"required":["sure"]}`)}
	heard := func(res *mcp.ElicitResult, err error) *mcp.CallToolResult {
		text := ""
		switch {
		case err != nil:
			text = "could not ask: " + err.Error()
		case res == nil:
			text = "no answer"
		default:
			text = fmt.Sprintf("%s %v", res.Action, res.Content["sure"])
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	srv.AddTool(&mcp.Tool{Name: "ask_new", Description: "Asks in its answer.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			resp, ok := req.Params.InputResponses["sure"]
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"sure": form}}, nil
			}
			res, _ := resp.(*mcp.ElicitResult)
			return heard(res, nil), nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask_old", Description: "Asks while it runs.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return heard(req.Session.Elicit(ctx, form)), nil
		})
}
