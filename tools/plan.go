package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// UpdatePlanName is the plan tool's name, the one Codex's models are
// trained on.
const UpdatePlanName = "update_plan"

const updatePlanDescription = `Keep the plan of a task of several steps, shown to the user as you work. ` +
	`Send the whole plan each time: a few short steps, each pending, in_progress or completed, ` +
	`with exactly one in_progress while work remains. Call it when you start such a task and again ` +
	`as each step finishes. Skip it for a simple question or a one-step change.`

var updatePlanSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"explanation":{"type":"string","description":"Optional: why the plan is as it is, or what changed."},` +
	`"plan":{"type":"array","description":"The whole plan, in order.","items":{"type":"object","properties":{` +
	`"step":{"type":"string","description":"The step, in a few words."},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]}},` +
	`"required":["step","status"]}}},"required":["plan"]}`)

// PlanUpdated is what the model reads after a plan it sent was taken.
const PlanUpdated = "Plan updated"

// UpdatePlan is the update_plan tool: the model sends its whole plan, and
// the result carries it (Result.Plan) for the editor's plan panel and the
// session. It touches nothing, so it needs no approval, and the editor
// shows no tool call for it.
func UpdatePlan() Tool { return updatePlan{} }

type updatePlan struct{}

func (updatePlan) Name() string            { return UpdatePlanName }
func (updatePlan) Description() string     { return updatePlanDescription }
func (updatePlan) Schema() json.RawMessage { return updatePlanSchema }

func (updatePlan) Prepare(_ Caller, raw json.RawMessage) Prepared {
	call := Call{Title: "Update plan", Kind: KindThink, Hidden: true}
	plan, err := ParsePlan(raw)
	return Prepared{Call: call, Run: func(context.Context, Live) Result {
		if err != nil {
			return Result{Text: "Error: " + err.Error(), IsError: true, Raw: ErrorOutput{IsError: true}}
		}
		return Result{Text: PlanUpdated, Raw: plan, Plan: plan}
	}}
}

// ParsePlan validates update_plan's arguments; its errors are
// model-visible as they are (tool-text.md, section update_plan).
func ParsePlan(raw json.RawMessage) (*Plan, error) {
	var obj map[string]json.RawMessage
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, fmt.Errorf("invalid arguments: expected a JSON object")
	}
	plan := &Plan{Entries: []PlanEntry{}}
	if v, ok := obj["explanation"]; ok && !isNull(v) {
		if json.Unmarshal(v, &plan.Explanation) != nil {
			return nil, fmt.Errorf(`"explanation" must be a string`)
		}
	}
	v, ok := obj["plan"]
	if !ok || isNull(v) {
		return nil, fmt.Errorf(`missing required property "plan"`)
	}
	entries, err := planEntries(v)
	if err != nil {
		return nil, err
	}
	plan.Entries = append(plan.Entries, entries...)
	return plan, nil
}

// planEntries reads the "plan" property: an array of {step, status}.
func planEntries(v json.RawMessage) ([]PlanEntry, error) {
	var items []map[string]json.RawMessage
	if bytes.TrimSpace(v)[0] != '[' || json.Unmarshal(v, &items) != nil {
		// An array of something other than objects: each item is checked
		// below, so only a non-array fails here.
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return nil, fmt.Errorf(`"plan" must be an array`)
		}
		items = make([]map[string]json.RawMessage, len(elems))
	}
	var entries []PlanEntry
	for i, it := range items {
		var e PlanEntry
		if json.Unmarshal(it["step"], &e.Step) != nil || e.Step == "" {
			return nil, fmt.Errorf("plan[%d].step must be a non-empty string", i)
		}
		_ = json.Unmarshal(it["status"], &e.Status)
		switch e.Status {
		case PlanPending, PlanInProgress, PlanCompleted:
		default:
			return nil, fmt.Errorf("plan[%d].status must be one of pending, in_progress, completed", i)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func isNull(v json.RawMessage) bool {
	return string(bytes.TrimSpace(v)) == "null"
}
