//go:build unix

package instructions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/instructions"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// secretText is what a file the sandbox denies holds (the stored key,
// another session's log): it must never reach the system prompt.
const secretText = "sk-SECRET-never-in-a-prompt"

func writeSecret(t *testing.T) string {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	return secret
}

// A confined command renaming a link to a denied file over AGENTS.md, again
// and again, while the agent reads the instructions: a check by name and a
// read by name let the link in between them (2-3 % of prompts). One open
// below the project, no link out of it, leaves no between.
func TestInstructionsLinkSwappedInNeverRead(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := writeSecret(t)
	path := filepath.Join(cwd, "AGENTS.md")
	attack := testutil.SwapLink(t, path, secret, []byte("be brief\n"))
	var in instructions.Reader
	// Until the attack swapped a link in often enough to win a race of a
	// few percent many times over, within a bound for a starved attacker.
	read := 0
	for i := 0; i < 50000 && (i < 2000 || attack.Swaps() < 1000); i++ {
		set, _ := in.Load(cwd, "")
		for _, f := range set.Files {
			read++
			if strings.Contains(f.Text, secretText) {
				attack.Stop()
				t.Fatalf("the denied file's text is in the instructions after %d reads", read)
			}
		}
	}
	if swaps := attack.Stop(); swaps == 0 || read == 0 {
		t.Fatalf("no attack: %d links swapped in, %d files read", swaps, read)
	}
	t.Logf("%d links swapped in, %d files read", attack.Swaps(), read)
}

// HEAD (or .git) linked to a file outside the project: 7 bytes of it would
// go to the endpoint as the commit checked out.
func TestInstructionsGitHeadLinkOutNotRead(t *testing.T) {
	t.Parallel()
	secret := writeSecret(t)
	for _, link := range []string{filepath.Join(".git", "HEAD"), ".git"} {
		cwd := t.TempDir()
		if link != ".git" {
			if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(secret, filepath.Join(cwd, link)); err != nil {
			t.Fatal(err)
		}
		var in instructions.Reader
		if set, _ := in.Load(cwd, ""); set.Detached != "" || set.Branch != "" {
			t.Errorf("%s linked out of the project: branch %q, commit %q", link, set.Branch, set.Detached)
		}
	}
}
