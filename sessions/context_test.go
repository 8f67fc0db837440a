package sessions_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

func TestFinish(t *testing.T) {
	r := sessions.New(sessions.Options{})
	s, err := r.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	user := func(c string) agent.Message { return agent.Message{Role: agent.RoleUser, Content: c} }
	s.Finish(agent.Outcome{Messages: []agent.Message{user("a"), user("b")}})
	if u := s.Usage(); u.Size != 0 {
		t.Errorf("usage %+v after a turn without a response", u)
	}
	s.Finish(agent.Outcome{Messages: []agent.Message{user("c")}, Usage: agent.ContextUsage{Used: 10, Size: 100}})
	if diff := cmp.Diff([]agent.Message{user("a"), user("b"), user("c")}, s.History()); diff != "" {
		t.Errorf("appended history (-want +got):\n%s", diff)
	}
	compacted := []agent.Message{agent.SummaryMessage("abc"), user("c"), user("d")}
	s.Finish(agent.Outcome{Messages: []agent.Message{user("d")}, History: compacted})
	if diff := cmp.Diff(compacted, s.History()); diff != "" {
		t.Errorf("compacted history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(agent.ContextUsage{Used: 10, Size: 100}, s.Usage()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// A session keeps only the images a request may still carry: one prompt
// image after another, the oldest become notes in the history itself, so
// its memory is bounded as the requests are.
func TestFinishBoundsImages(t *testing.T) {
	r := sessions.New(sessions.Options{})
	s, err := r.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := agent.MaxRequestImages + 3
	for i := range n {
		img := agent.Image{MimeType: "image/png", Data: "QUJD", Name: fmt.Sprintf("shot-%d", i)}
		s.Finish(agent.Outcome{Messages: []agent.Message{{Role: agent.RoleUser, Content: "look", Images: []agent.Image{img}}}})
	}
	h := s.History()
	images := 0
	for _, m := range h {
		images += len(m.Images)
	}
	if images != agent.MaxRequestImages || len(h[0].Images) != 0 || h[0].Content != "look\n"+agent.OmittedImageNote("shot-0") {
		t.Errorf("history holds %d images; first message %+v", images, h[0])
	}
}
