package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/tools"
)

func TestUpdatePlan(t *testing.T) {
	t.Parallel()
	tl := tools.UpdatePlan()
	if tl.Name() != "update_plan" {
		t.Fatalf("name %q", tl.Name())
	}
	var schema map[string]any
	if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	cases := []struct {
		name, args string
		text       string
		plan       *tools.Plan
	}{
		{"whole plan", `{"explanation":"why","plan":[{"step":"Read the code","status":"completed"},{"step":"Fix it","status":"in_progress"},{"step":"Test","status":"pending"}]}`,
			"Plan updated", &tools.Plan{Explanation: "why", Entries: []tools.PlanEntry{{"Read the code", "completed"}, {"Fix it", "in_progress"}, {"Test", "pending"}}}},
		{"empty plan", `{"plan":[]}`, "Plan updated", &tools.Plan{Entries: []tools.PlanEntry{}}},
		{"extra keys ignored", `{"plan":[{"step":"a","status":"pending","x":1}],"y":2}`, "Plan updated", &tools.Plan{Entries: []tools.PlanEntry{{"a", "pending"}}}},
		{"missing plan", `{}`, `Error: missing required property "plan"`, nil},
		{"null plan", `{"plan":null}`, `Error: missing required property "plan"`, nil},
		{"empty arguments", ``, `Error: missing required property "plan"`, nil},
		{"plan not array", `{"plan":"do it"}`, `Error: "plan" must be an array`, nil},
		{"plan object", `{"plan":{"step":"a"}}`, `Error: "plan" must be an array`, nil},
		{"empty step", `{"plan":[{"step":"a","status":"pending"},{"step":"","status":"pending"}]}`, `Error: plan[1].step must be a non-empty string`, nil},
		{"step not string", `{"plan":[{"step":3,"status":"pending"}]}`, `Error: plan[0].step must be a non-empty string`, nil},
		{"item not object", `{"plan":["a"]}`, `Error: plan[0].step must be a non-empty string`, nil},
		{"bad status", `{"plan":[{"step":"a","status":"done"}]}`, `Error: plan[0].status must be one of pending, in_progress, completed`, nil},
		{"missing status", `{"plan":[{"step":"a"}]}`, `Error: plan[0].status must be one of pending, in_progress, completed`, nil},
		{"explanation not string", `{"explanation":1,"plan":[]}`, `Error: "explanation" must be a string`, nil},
		{"not an object", `[1]`, `Error: invalid arguments: expected a JSON object`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := tl.Prepare(tools.Caller{SessionID: "s"}, json.RawMessage(c.args))
			if !p.Call.Hidden || p.Call.Subject.Needed() {
				t.Errorf("call %+v: want hidden, no approval", p.Call)
			}
			res := p.Run(context.Background(), nil)
			if res.Text != c.text {
				t.Errorf("text %q; want %q", res.Text, c.text)
			}
			if res.IsError != (c.plan == nil) {
				t.Errorf("IsError %v", res.IsError)
			}
			if d := cmp.Diff(c.plan, res.Plan); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}
