package agent_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TestRunUpdatePlan: a plan the model sends is emitted whole as EventPlan
// after its result, the model reads "Plan updated", and a bad call is an
// error result with no plan.
func TestRunUpdatePlan(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	p := newReplay(t,
		callTools(tc("c1", "update_plan", `{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"pending"}]}`)),
		callTools(tc("c2", "update_plan", `{"plan":[{"step":"a","status":"finished"}]}`)),
		say("done"))
	var rec recorder
	out, err := newLoop(t, p, tools.UpdatePlan()).Run(ctx, agent.Turn{Prompt: "go", Emit: rec.emit})
	if err != nil {
		t.Fatal(err)
	}
	var plans []*tools.Plan
	var hidden int
	for _, e := range rec.list() {
		if e.Kind == agent.EventPlan {
			plans = append(plans, e.Plan)
		}
		if e.Kind == agent.EventToolCall && e.Call.Call.Hidden {
			hidden++
		}
	}
	want := []*tools.Plan{{Entries: []tools.PlanEntry{{Step: "a", Status: "in_progress"}, {Step: "b", Status: "pending"}}}}
	if d := cmp.Diff(want, plans); d != "" {
		t.Errorf("plans (-want +got):\n%s", d)
	}
	if hidden != 2 {
		t.Errorf("%d hidden calls, want 2", hidden)
	}
	var results []string
	for _, m := range out.Messages {
		if m.Role == agent.RoleTool {
			results = append(results, m.Content)
		}
	}
	if d := cmp.Diff([]string{"Plan updated", "Error: plan[0].status must be one of pending, in_progress, completed"}, results); d != "" {
		t.Errorf("tool results (-want +got):\n%s", d)
	}
}

// TestPlanCommand: /plan shows the session's plan again (and says so when
// there is none) without a model request.
func TestPlanCommand(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	l := newLoop(t, newReplay(t))
	var rec recorder
	plan := &tools.Plan{Explanation: "why", Entries: []tools.PlanEntry{{Step: "a", Status: "completed"}, {Step: "b", Status: "in_progress"}, {Step: "c", Status: "pending"}}}
	if _, err := l.Run(ctx, agent.Turn{Prompt: "/plan", Plan: plan, Emit: rec.emit}); err != nil {
		t.Fatal(err)
	}
	evs := rec.list()
	if len(evs) != 2 || evs[0].Kind != agent.EventPlan || evs[0].Plan != plan {
		t.Fatalf("events %+v; want the plan, then text", evs)
	}
	if evs[1].Text != "Plan: why\n[x] a\n[>] b\n[ ] c" {
		t.Errorf("text %q", evs[1].Text)
	}
	var none recorder
	if _, err := l.Run(ctx, agent.Turn{Prompt: "/plan", Emit: none.emit}); err != nil {
		t.Fatal(err)
	}
	if got := brief(none.list()); len(got) != 1 || !strings.Contains(got[0], "no plan yet") {
		t.Errorf("without a plan: %v", got)
	}
}

// TestRunInstructionsPerSession: the loop puts the instruction files it is
// given and the injected date in the system prompt, and tells the editor
// what it is given to tell (package instructions decides when: the first
// time, and after a change), as the turn starts.
func TestRunInstructionsPerSession(t *testing.T) {
	t.Parallel()
	ctx := testutil.Context(t)
	cwd := t.TempDir()
	file := filepath.Join(cwd, "AGENTS.md")
	p := newReplay(t, say("1"), say("2"), say("3"))
	l := newLoop(t, p)
	l.Now = func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	var shown []*agent.InstructionsRead
	turn := func(prompt, text string, news *agent.InstructionsRead) {
		var rec recorder
		project := agent.InstructionSet{Files: []agent.InstructionFile{{Path: file, Text: text}}}
		if _, err := l.Run(ctx, agent.Turn{Caller: tools.Caller{Cwd: cwd}, Prompt: prompt, Project: project, NewInstructions: news, Emit: rec.emit}); err != nil {
			t.Fatal(err)
		}
		for _, e := range rec.list() {
			if e.Kind == agent.EventInstructions {
				shown = append(shown, e.Instructions)
			}
		}
	}
	first := &agent.InstructionsRead{Paths: []string{file}}
	changed := &agent.InstructionsRead{Paths: []string{file}, Changed: []string{file}}
	turn("a", "rule one\n", first)
	turn("b", "rule one\n", nil)
	turn("c", "rule two, longer\n", changed)
	want := []*agent.InstructionsRead{first, changed}
	if d := cmp.Diff(want, shown); d != "" {
		t.Errorf("shown (-want +got):\n%s", d)
	}
	reqs := p.requests()
	sys := func(i int) string { return reqs[i].Messages[0].Content }
	if !strings.Contains(sys(0), "- Date: 2030-01-02 (Wednesday)") || !strings.Contains(sys(0), "rule one") {
		t.Errorf("first system prompt:\n%s", sys(0))
	}
	if !strings.Contains(sys(2), "rule two, longer") || strings.Contains(sys(2), "rule one") {
		t.Errorf("third system prompt misses the change:\n%s", sys(2))
	}
}
