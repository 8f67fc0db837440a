package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeBlock is one ```sh block of the README's guide and how it is
// marked: to run, or skipped with a reason.
type readmeBlock struct {
	line int
	code string
	run  bool
	skip string
}

// guideBlocks are the ```sh blocks of the README before its Internals,
// each with the marker on the line above it.
func guideBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if i := strings.Index(text, "\n## Internals"); i >= 0 {
		text = text[:i]
	}
	lines := strings.Split(text, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		blk := readmeBlock{line: i + 1}
		if i > 0 {
			switch m := lines[i-1]; {
			case m == "<!-- readme-test: runs -->":
				blk.run = true
			case strings.HasPrefix(m, "<!-- readme-test: skip, ") && strings.HasSuffix(m, " -->"):
				blk.skip = strings.TrimSuffix(strings.TrimPrefix(m, "<!-- readme-test: skip, "), " -->")
			}
		}
		var code []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			code = append(code, lines[i])
		}
		blk.code = strings.Join(code, "\n") + "\n"
		blocks = append(blocks, blk)
	}
	return blocks
}

// TestReadmeBlocks runs every command block of the README's guide that
// can run offline, as a reader would type it: bash -e, a temporary HOME,
// dsh-acp (and go run ./cmd/dsh-acp) being the binary the tests built, in
// a directory holding a copy of examples/. Every block is marked; one
// that is not fails, so a new example is run or says why not.
func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	blocks := guideBlocks(t)
	if len(blocks) < 5 {
		t.Fatalf("only %d command blocks found in the README's guide", len(blocks))
	}
	bin := t.TempDir()
	if err := os.Symlink(binPath, filepath.Join(bin, "dsh-acp")); err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("../../examples/tour.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, blk := range blocks {
		switch {
		case blk.run:
		case blk.skip != "":
			t.Logf("README.md:%d not run: %s", blk.line, blk.skip)
			continue
		default:
			t.Errorf("README.md:%d: a command block with no readme-test marker (runs, or skip with why):\n%s", blk.line, blk.code)
			continue
		}
		ran++
		t.Run("line "+strconv.Itoa(blk.line), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "examples"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "examples", "tour.jsonl"), examples, 0o600); err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			code := strings.ReplaceAll(blk.code, "go run ./cmd/dsh-acp", "dsh-acp")
			cmd := exec.CommandContext(ctx, "bash", "-e", "-c", code)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home,
				"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state"), "TMPDIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("README.md:%d failed: %v\n--- block:\n%s--- output:\n%s", blk.line, err, blk.code, out)
			}
		})
	}
	if ran < 3 {
		t.Errorf("only %d blocks of the guide run", ran)
	}
}
