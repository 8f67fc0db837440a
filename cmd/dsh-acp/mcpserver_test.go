package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerEnv makes this test binary, started by dsh-acp as a session's
// stdio MCP server, serve MCP instead of running the tests.
const mcpServerEnv = "DSH_TEST_MCP_SERVER"

// mcpBigLines is how many lines the big tool returns: 48,894 bytes, beyond
// the 32,000 a model is given, so the result spills.
const mcpBigLines = 10000

// mcpServerMain serves one tool, big, whose text is the numbers 1 to
// mcpBigLines, one a line. In mode "setsid" it first starts a `sleep 1000`
// in a session of its own, which it never waits for: a daemon that left the
// server's process group and session. In mode "image" it serves a second
// tool, picture, whose result is a text and mcpPicture, a PNG.
//
// In mode "slow" it first waits two seconds, as a server that downloads
// or indexes before it answers: a turn's first request waits for it.
func mcpServerMain(mode string) int {
	if mode == "slow" {
		time.Sleep(2 * time.Second)
	}
	if mode == "setsid" {
		daemon := exec.Command("sleep", "1000")
		daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := daemon.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mcp server:", err)
			return 1
		}
		_ = daemon.Process.Release()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "dsh-acp-test", Version: "1"}, nil)
	var b strings.Builder
	for i := 1; i <= mcpBigLines; i++ {
		fmt.Fprintln(&b, i)
	}
	text := b.String()
	srv.AddTool(&mcp.Tool{Name: "big", Description: "A long text.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	if mode == "image" {
		srv.AddTool(&mcp.Tool{Name: "picture", Description: "A picture.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a red square"}, &mcp.ImageContent{MIMEType: "image/png", Data: mcpPicture()}}}, nil
			})
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcp server:", err)
		return 1
	}
	return 0
}

// mcpPicture is a 4x4 red PNG, the same bytes every time.
func mcpPicture() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	draw.Draw(img, img.Bounds(), &image.Uniform{C: color.RGBA{R: 255, A: 255}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}
