package acp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// smallDisk mounts a 1 MiB tmpfs for the test (root only) and returns it.
func smallDisk(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v", err)
	}
	// Registered before the harness's cleanups, so it runs after them:
	// the agent has closed its files by then.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file until the disk is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// answerText is the text of the agent's messages of a session from the
// nth update on (the scripted model streams none of its own).
func answerText(ups []acpsdk.SessionUpdate, from int) string {
	var b strings.Builder
	for _, u := range ups[from:] {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// hasText matches an agent message chunk containing s.
func hasText(s string) func(acpsdk.SessionUpdate) bool {
	return func(u acpsdk.SessionUpdate) bool {
		c := u.AgentMessageChunk
		return c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, s)
	}
}

// On a full disk the answer says, once, that the session is not being
// saved and why; the turns go on; once space is back the answer says it is
// saved again, and a later load has every turn.
func TestFullDiskToldOnce(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t)
	dir := filepath.Join(disk, "state")
	// Prompts larger than a page, so that each turn needs new space.
	big := strings.Repeat("x", 8<<10)
	prov := script{
		"first " + big:  steps(text("one")),
		"second " + big: steps(text("two")),
		"third " + big:  steps(text("three")),
	}
	h := newHarness(t, harnessOptions{provider: prov, store: newStore(t, dir)})
	sid, _ := h.newSession(sessions.ModeAuto)
	filler := fillDisk(t, disk)

	from := len(h.client.updatesOf(sid))
	if _, err := h.prompt(sid, "first "+big); err != nil {
		t.Fatal(err)
	}
	h.client.waitUpdate(t, h.ctx, sid, "the notice", hasText("not being saved"))
	got := answerText(h.client.updatesOf(sid), from)
	if !strings.Contains(got, "This session is not being saved: ") || !strings.Contains(got, "no space left on device") {
		t.Fatalf("answer on a full disk: %q", got)
	}

	from = len(h.client.updatesOf(sid))
	if _, err := h.prompt(sid, "second "+big); err != nil {
		t.Fatal(err)
	}
	if got := answerText(h.client.updatesOf(sid), from); got != "" {
		t.Errorf("second answer on a full disk, told again: %q", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	from = len(h.client.updatesOf(sid))
	if _, err := h.prompt(sid, "third "+big); err != nil {
		t.Fatal(err)
	}
	h.client.waitUpdate(t, h.ctx, sid, "the notice", hasText("saved again"))
	if got := answerText(h.client.updatesOf(sid), from); got != "\n\nThis session is being saved again; nothing of it was lost." {
		t.Errorf("answer once space is back: %q", got)
	}
	if _, err := h.conn.CloseSession(h.ctx, acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}

	// Nothing was lost: every prompt is in the store.
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Open(string(sid))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var prompts []string
	for _, e := range sess.Entries() {
		if p, err := e.Decode(); err == nil {
			if pr, ok := p.(store.Prompt); ok {
				prompts = append(prompts, strings.Fields(pr.Text)[0])
			}
		}
	}
	if strings.Join(prompts, " ") != "first second third" {
		t.Errorf("stored prompts %v", prompts)
	}
}
