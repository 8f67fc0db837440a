package acp

import (
	"encoding/json"
	"testing"

	"github.com/dsh-acp/dsh-acp/tools"
)

// TestNoticedReplayedAsShown: the view stored for a notice's tool call
// gives back, on replay, the very update the editor got live: a failed
// task ended by a signal, a diff, a binary file's line, a location without
// a line, its rawOutput a tool's own type.
func TestNoticedReplayedAsShown(t *testing.T) {
	t.Parallel()
	old, line := "a <b>\n", 3
	n := tools.Noticed{TaskID: "bash-4", Result: tools.Result{
		Text:   "background bash task bash-4 finished [status: killed, signal: SIGTERM]. Read its output with bash_output.",
		Failed: true,
		Raw: struct {
			Signal       string `json:"signal,omitempty"`
			TaskID       string `json:"taskId,omitempty"`
			ChangedFiles int    `json:"changedFiles,omitempty"`
		}{"SIGTERM", "bash-4", 2},
		Changes: []tools.Change{
			{Path: "/p/a.txt", OldText: &old, NewText: "a <c>\n"},
			{Path: "/p/b.bin", Line: "/p/b.bin: binary file created"},
		},
		Locations: []tools.Location{{Path: "/p/a.txt", Line: &line}, {Path: "/p/b.bin"}},
	}}
	live := noticedCall(n)
	view := noticedView(n, live.ToolCall)
	// Through JSON, as the store keeps it.
	data, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	view.Content, view.Locations, view.RawOutput = nil, nil, nil
	if err := json.Unmarshal(data, &view); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(replayedNoticed(&view))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("replayed:\n%s\nlive:\n%s", got, want)
	}

	// Stored past the cap: the notice's text, the rest as it was.
	view.Content, view.Locations = nil, nil
	up := replayedNoticed(&view)
	c := up.ToolCall
	if len(c.Content) != 1 || c.Content[0].Content == nil || c.Content[0].Content.Content.Text == nil ||
		c.Content[0].Content.Content.Text.Text != "```console\n"+n.Text+"\n```" || c.Locations != nil ||
		c.Status != "failed" || c.Title != "Background task bash-4 finished" || c.RawOutput == nil {
		t.Errorf("replayed without its content: %+v", c)
	}
}
