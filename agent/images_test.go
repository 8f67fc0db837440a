package agent_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent"
)

// image is one of n decoded bytes (its base64 is what is held).
func image(name string, n int) agent.Image {
	return agent.Image{MimeType: "image/png", Name: name, Data: base64.StdEncoding.EncodeToString(make([]byte, n))}
}

// A request carries the newest images that fit, at most MaxRequestImages
// and MaxRequestImageBytes; each older one is a note the model reads, in
// its message's text. The messages given are not changed.
func TestBoundImages(t *testing.T) {
	t.Parallel()
	var msgs []agent.Message
	for i := range agent.MaxRequestImages + 2 {
		msgs = append(msgs, agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("prompt %d", i), Images: []agent.Image{image(fmt.Sprintf("img-%d", i), 10)}})
	}
	got := agent.BoundImages(msgs)
	for i, m := range got {
		kept := i >= 2
		if (len(m.Images) == 1) != kept {
			t.Errorf("message %d: %d images, kept %v", i, len(m.Images), kept)
		}
		if !kept && m.Content != fmt.Sprintf("prompt %d\n", i)+agent.OmittedImageNote(fmt.Sprintf("img-%d", i)) {
			t.Errorf("message %d: %q", i, m.Content)
		}
	}
	if len(msgs[0].Images) != 1 || msgs[0].Content != "prompt 0" {
		t.Errorf("the given messages changed: %+v", msgs[0])
	}
	if want := "[image omitted: img-0; a request carries only the newest images, at most 8 and 20 MiB in all]"; agent.OmittedImageNote("img-0") != want {
		t.Errorf("note %q, want %q", agent.OmittedImageNote("img-0"), want)
	}

	// By bytes: a tool's three images of 8 MiB, of which the newest two
	// fit in 20 MiB; the oldest is noted where it was.
	tool := agent.Message{Role: agent.RoleTool, ToolCallID: "c", Content: "3 images", Images: []agent.Image{image("a", 8<<20), image("b", 8<<20), image("c", 8<<20)}}
	got = agent.BoundImages([]agent.Message{tool})
	if n := len(got[0].Images); n != 2 || got[0].Images[0].Name != "b" || got[0].Images[1].Name != "c" {
		t.Errorf("kept %d images: %+v", n, got[0].Images)
	}
	if !strings.HasSuffix(got[0].Content, "\n"+agent.OmittedImageNote("a")) {
		t.Errorf("tool text %q", got[0].Content)
	}
	// One image over the whole bound alone is never sent.
	if got := agent.BoundImages([]agent.Message{{Role: agent.RoleUser, Images: []agent.Image{image("", agent.MaxRequestImageBytes+1)}}}); len(got[0].Images) != 0 || got[0].Content != agent.OmittedImageNote("") {
		t.Errorf("an image over the bound: %d images, %q", len(got[0].Images), got[0].Content)
	}
}
