package agent_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
)

var update = flag.Bool("update", false, "rewrite testdata/system-prompt*.golden")

// TestSystemPromptGolden pins the whole system prompt: without instruction
// files (and its size, which must stay under 1,500 tokens), and with some.
func TestSystemPromptGolden(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	bare := agent.SystemPrompt(agent.PromptEnv{Now: now, OS: "linux", Cwd: "/home/u/project",
		Project: agent.InstructionSet{Root: "/home/u/project", Branch: "main"}})
	with := agent.SystemPrompt(agent.PromptEnv{Now: now, OS: "darwin", Cwd: "/home/u/project/web",
		Project: agent.InstructionSet{Root: "/home/u/project", Detached: "0123456",
			Files: []agent.InstructionFile{
				{Path: "/home/u/.config/dsh-acp/AGENTS.md", Text: "Answer in British English.\n"},
				{Path: "/home/u/project/web/AGENTS.md", Text: "Run `make check` before you say done.\nNever touch vendor/.\n", Truncated: true},
			},
			Cut: []string{"/home/u/project/AGENTS.md"}}})
	for name, got := range map[string]string{"system-prompt.golden": bare, "system-prompt-instructions.golden": with} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	// The same rough count the agent uses for its estimates (about 4 bytes
	// a token for English), with a margin: at most 5,000 bytes.
	if len(bare) > 5000 {
		t.Errorf("system prompt without instructions is %d bytes (about %d tokens); keep it under 1,500 tokens", len(bare), len(bare)/4)
	}
	t.Logf("system prompt without instructions: %d bytes, ~%d tokens", len(bare), agent.EstimateMessages([]agent.Message{{Role: agent.RoleSystem, Content: bare}}))
}
