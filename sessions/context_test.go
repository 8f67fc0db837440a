package sessions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
)

func TestFinish(t *testing.T) {
	r := sessions.New(sessions.Options{})
	s, err := r.Create(t.TempDir())
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
