package sessions_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TestReplay: a reloaded session replays what the editor saw, in order: the
// prompt as the editor sent it, the model's message, each shown tool call
// with its tool's name and the view stored for it (a hidden one left out),
// the plan. The same when the session is live here already.
func TestReplay(t *testing.T) {
	st, err := store.New(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := sessions.New(sessions.Options{Store: st})
	s, err := reg.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	blocks := json.RawMessage(`[{"type":"text","text":"list it"}]`)
	s.AddPrompt("list it", blocks, nil)
	s.AddMessage(agent.Message{Role: agent.RoleAssistant, Content: "Listing.", ReasoningContent: "ls will do",
		ToolCalls: []agent.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "c2", Name: "update_plan", Arguments: `{}`}}}, nil, false)
	view := &sessions.ToolView{Kind: "execute", RawInput: json.RawMessage(`{"command":"ls"}`), Status: "completed", Content: json.RawMessage(`[]`)}
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Content: "a\nb"}, view, false)
	s.AddMessage(agent.Message{Role: agent.RoleTool, ToolCallID: "c2", Content: "ok"}, &sessions.ToolView{Hidden: true}, false)
	plan := &tools.Plan{Entries: []tools.PlanEntry{{Step: "list", Status: "completed"}}}
	s.SetPlan(plan)

	want := []sessions.Replayed{
		{Prompt: &sessions.ReplayedPrompt{Text: "list it", Blocks: blocks}},
		{Message: &sessions.ReplayedMessage{Text: "Listing.", Reasoning: "ls will do"}},
		{Call: &sessions.ReplayedCall{ID: "c1", Name: "bash", Text: "a\nb", View: *view}},
		{Plan: plan},
	}
	collect := func(l sessions.Loaded) []sessions.Replayed {
		var got []sessions.Replayed
		for r := range l.Replay {
			got = append(got, r)
		}
		return got
	}
	live, err := reg.Open(s.ID, s.Cwd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, collect(live)); diff != "" {
		t.Errorf("replay of the live session (-want +got):\n%s", diff)
	}
	if err := reg.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	reg2 := sessions.New(sessions.Options{Store: st})
	defer reg2.CloseAll()
	l, err := reg2.Open(s.ID, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, collect(l)); diff != "" {
		t.Errorf("replay after a restart (-want +got):\n%s", diff)
	}
}
