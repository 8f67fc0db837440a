package acp

import (
	"encoding/json"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

// promptAbout is what the user typed of a prompt, for its title: the text
// blocks, with a linked file as its @name, without embedded resources
// (pasted selections, attached files) or images.
func promptAbout(blocks []acpsdk.ContentBlock) string {
	var parts []string
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			parts = append(parts, c.Text.Text)
		case c.ResourceLink != nil:
			parts = append(parts, "@"+c.ResourceLink.Name)
		}
	}
	// A space between blocks: a title collapses runs of them.
	return strings.Join(parts, " ")
}

// sessionInfo is the session's title and time of last activity, as the
// editor's history shows them (sent at the end of every turn).
func sessionInfo(s *sessions.Session) acpsdk.SessionUpdate {
	up := &acpsdk.SessionSessionInfoUpdate{UpdatedAt: acpsdk.Ptr(timestamp(s.Updated()))}
	if t := s.Title(); t != "" {
		up.Title = acpsdk.Ptr(t)
	}
	return acpsdk.SessionUpdate{SessionInfoUpdate: up}
}

// timestamp is a session time as ACP has it (ISO 8601); a session with no
// activity yet is active now.
func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Format(time.RFC3339)
}

// toolView is what the editor saw of a finished call, as a client without
// Zed's terminal shows it: the description, the result text and what the
// call changed, with its locations.
func toolView(c agent.CallInfo, r tools.Result) *sessions.ToolView {
	failed, text := r.IsError || r.Failed, r.Text
	title := c.Call.Title
	if title == "" {
		title = c.Name
	}
	status := acpsdk.ToolCallStatusCompleted
	if failed {
		status = acpsdk.ToolCallStatusFailed
	}
	raw, _ := json.Marshal(rawInput(c.Args))
	content, _ := json.Marshal(append(append(headContent(c), fenced(text)), changeContent(r.Changes)...))
	v := &sessions.ToolView{Title: title, Kind: string(toolKind(c.Call)), RawInput: raw, Status: string(status), Content: content, Hidden: c.Call.Hidden,
		Changed: r.Changed}
	if locs := locations(r.Locations); len(locs) > 0 {
		v.Locations, _ = json.Marshal(locs)
	}
	return v
}

// storedBlocks are the prompt's blocks as the log keeps them: an image's
// data is stored beside the log (AddPrompt), not in the line.
func storedBlocks(blocks []acpsdk.ContentBlock) []acpsdk.ContentBlock {
	out := make([]acpsdk.ContentBlock, len(blocks))
	for i, b := range blocks {
		if b.Image != nil {
			img := *b.Image
			img.Data = ""
			b.Image = &img
		}
		out[i] = b
	}
	return out
}
