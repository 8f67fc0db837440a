package agent_test

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent"
)

// The environment names the other roots on a line of their own after the
// working directory; without them the prompt is as it always was.
func TestSystemPromptNamesOtherRoots(t *testing.T) {
	t.Parallel()
	env := agent.PromptEnv{OS: "linux", Cwd: "/home/u/web"}
	bare := agent.SystemPrompt(env)
	if strings.Contains(bare, "Other project roots") {
		t.Fatalf("a one-root prompt names other roots:\n%s", bare)
	}
	env.Roots = []string{"/home/u/api", "/srv/shared"}
	with := agent.SystemPrompt(env)
	wd := "- Working directory: /home/u/web (every bash call runs there unless you pass another workdir)\n"
	line := "- Other project roots: /home/u/api, /srv/shared (the user's project as much as the working directory: read and change files there too; relative paths and workdirs still start from the working directory, so name these by absolute path)\n"
	if !strings.Contains(with, wd+line) {
		t.Errorf("the prompt does not name the roots after the working directory:\n%s", with)
	}
	if strings.Replace(with, line, "", 1) != bare {
		t.Error("the roots' line is not the only difference from the one-root prompt")
	}
}
