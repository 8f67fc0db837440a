package acp

import (
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

// planUpdate is ACP's plan update: always the whole plan.
func planUpdate(p *tools.Plan) acpsdk.SessionUpdate {
	entries := make([]acpsdk.PlanEntry, 0, len(p.Entries))
	for _, e := range p.Entries {
		entries = append(entries, acpsdk.PlanEntry{
			Content:  e.Step,
			Status:   acpsdk.PlanEntryStatus(e.Status),
			Priority: acpsdk.PlanEntryPriorityMedium,
		})
	}
	return acpsdk.UpdatePlan(entries...)
}

// instructionsCall shows the editor which instruction files the model was
// given, as a finished tool call of kind read: its locations are the files,
// so an editor can open them. It is not part of the model's history.
func instructionsCall(r *agent.InstructionsRead) acpsdk.SessionUpdate {
	changed := map[string]bool{}
	for _, p := range r.Changed {
		changed[p] = true
	}
	title := "Read project instructions"
	if len(r.Changed) > 0 {
		title = "Read project instructions again (changed)"
	}
	var lines []string
	var locs []acpsdk.ToolCallLocation
	for _, p := range r.Paths {
		line := p
		if changed[p] {
			line += " (changed)"
		}
		lines = append(lines, line)
		locs = append(locs, acpsdk.ToolCallLocation{Path: p})
	}
	if len(r.Paths) == 0 {
		lines = append(lines, "No instruction files any more.")
	}
	for _, p := range r.Cut {
		lines = append(lines, fmt.Sprintf("%s (left out: over the %d KiB of instructions)", p, agent.MaxInstructions>>10))
	}
	return acpsdk.StartToolCall(acpsdk.ToolCallId("instructions-"+uuid.NewString()), title,
		acpsdk.WithStartKind(acpsdk.ToolKindRead),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusCompleted),
		acpsdk.WithStartLocations(locs),
		acpsdk.WithStartContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(strings.Join(lines, "\n")))}),
	)
}
