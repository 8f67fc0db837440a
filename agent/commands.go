package agent

import (
	"cmp"
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Command is a slash command the agent answers itself.
type Command struct {
	// Name is the command without its slash.
	Name        string
	Description string
	// Hint describes the text after the name; empty when it takes none.
	Hint string
}

// Slash command names.
const (
	CommandCompact = "compact"
	CommandTasks   = "tasks"
	CommandKill    = "kill"
	CommandPlan    = "plan"
	CommandUndo    = "undo"
)

// Commands are the slash commands, in the order an editor lists them.
func Commands() []Command {
	return []Command{
		{Name: CommandCompact, Description: "Summarize the conversation so far to free the context window", Hint: "optional focus for the summary"},
		{Name: CommandTasks, Description: "List this session's background tasks"},
		{Name: CommandKill, Description: "Stop one of this session's background tasks", Hint: "task id, e.g. bash-1"},
		{Name: CommandPlan, Description: "Show the session's plan"},
		{Name: CommandUndo, Description: "Put back the files the last command or edit of this session changed", Hint: "how many changes to undo (default 1)"},
	}
}

// ParseCommand reads a prompt that starts with one of Commands: its name and
// the text after it. Any other prompt, "/word" included, is not a command.
func ParseCommand(prompt string) (name, arg string, ok bool) {
	s := strings.TrimSpace(prompt)
	if !strings.HasPrefix(s, "/") {
		return "", "", false
	}
	word, rest, _ := strings.Cut(s[1:], " ")
	if i := strings.IndexAny(word, "\t\n\r"); i >= 0 {
		word, rest = word[:i], word[i+1:]+" "+rest
	}
	for _, c := range Commands() {
		if c.Name == word {
			return word, strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

// Tasks answers /tasks and /kill for a session's background tasks.
type Tasks interface {
	// ListTasks describes the caller's session's background tasks for a
	// person: id, command, status and age.
	ListTasks(caller tools.Caller) string
	// KillTask stops one of the caller's tasks as bash_kill does, ownership
	// fence included, and says what happened.
	KillTask(caller tools.Caller, id string) string
}

// ChangeLog is a session's record of what its calls changed, newest last,
// as /undo reads and changes it (the session stores every change of it).
type ChangeLog interface {
	// Last is the newest records still to undo, at most n, newest first;
	// when the newest is an /undo's own record it is the only one.
	Last(n int) []tools.ChangeRecord
	// Undone adds the record of an /undo that took back the newest
	// rec.Undid records; false when they are no longer the newest.
	Undone(rec tools.ChangeRecord) bool
	// Redone drops the newest record, an /undo's, whose changes were just
	// put back; false when the newest is no /undo.
	Redone() bool
}

// Undoer answers /undo: it puts back what the session's newest changes
// did, shows the editor the restoring diff as a tool call, asks before it
// touches a file changed since, and says what it did.
type Undoer interface {
	Undo(ctx context.Context, u UndoRequest)
}

// UndoRequest is one /undo.
type UndoRequest struct {
	Caller tools.Caller
	// Arg is the text after /undo: empty, or how many changes to undo.
	Arg     string
	Changes ChangeLog
	// Approver is asked before a file someone changed since is touched
	// (a call whose Subject is tools.Confirm); nil means no one can be
	// asked, and such files are left as they are.
	Approver Approver
	Emit     func(Event)
}

// runCommand answers a slash command without asking the model anything but
// a summary. Nothing of it enters the history the model sees, except the
// summary a /compact puts there.
func (l *Loop) runCommand(ctx context.Context, t Turn, name, arg string, emit func(Event), log *zap.Logger) (Outcome, error) {
	out := Outcome{Stop: StopEndTurn}
	say := func(text string) {
		emit(Event{Kind: EventText, Text: text, MessageID: newMessageID()})
	}
	switch name {
	case CommandCompact:
		out = l.compactCommand(ctx, t, arg, emit, log)
	case CommandTasks:
		if l.Tasks == nil {
			say("This agent has no background tasks.")
			break
		}
		say(l.Tasks.ListTasks(t.Caller))
	case CommandKill:
		switch {
		case arg == "":
			say("Usage: /kill <task-id> (see /tasks for the ids)")
		case l.Tasks == nil:
			say("This agent has no background tasks.")
		default:
			say(l.Tasks.KillTask(t.Caller, strings.Fields(arg)[0]))
		}
	case CommandPlan:
		if t.Plan == nil {
			say("This session has no plan yet: the model makes one for a task of several steps.")
			break
		}
		emit(Event{Kind: EventPlan, Plan: t.Plan})
		say(PlanText(t.Plan))
	case CommandUndo:
		if l.Undo == nil || t.Changes == nil {
			say("Undo is not available in this agent.")
			break
		}
		l.Undo.Undo(ctx, UndoRequest{Caller: t.Caller, Arg: arg, Changes: t.Changes, Approver: t.Approver, Emit: emit})
		if ctx.Err() != nil {
			out.Stop = StopCancelled
		}
	}
	return out, nil
}

// compactCommand answers /compact focus: the history summarized, and the
// summary request paid for like any other (in the usage update it sends,
// also when the summary was of no use).
func (l *Loop) compactCommand(ctx context.Context, t Turn, focus string, emit func(Event), log *zap.Logger) Outcome {
	out := Outcome{Stop: StopEndTurn}
	conv := append([]Message(nil), t.History...)
	next, c, err := l.compact(ctx, t.Model, conv, -1, TriggerManual, focus, emit, log)
	out.Spent = addUsage(Usage{}, c.Spent)
	out.Cost = l.addCost(Cost{}, cmp.Or(t.Model, l.Model), c.Spent)
	switch {
	case errors.Is(err, ErrNothingToCompact):
		emit(Event{Kind: EventText, Text: "Nothing to compact yet: the conversation is short enough to keep as it is.", MessageID: newMessageID()})
		return out
	case err != nil:
		if ctx.Err() != nil {
			out.Stop = StopCancelled
		}
		if out.Cost.Currency != "" {
			out.Usage = t.Usage
			if out.Usage.Size == 0 {
				out.Usage = l.estimatedUsage(t, t.History)
			}
			out.Usage.Cost = addCosts(t.Usage.Cost, out.Cost)
			emit(Event{Kind: EventUsage, Usage: out.Usage})
		}
		return out
	}
	out.History = next
	out.Usage = l.estimatedUsage(t, next)
	out.Usage.Cost = addCosts(t.Usage.Cost, out.Cost)
	emit(Event{Kind: EventUsage, Usage: out.Usage})
	return out
}

// PlanText shows a plan to a person, one step a line: [x] completed, [>] in
// progress, [ ] pending.
func PlanText(p *tools.Plan) string {
	var b strings.Builder
	b.WriteString("Plan")
	if p.Explanation != "" {
		b.WriteString(": " + p.Explanation)
	}
	if len(p.Entries) == 0 {
		b.WriteString("\n(no steps)")
	}
	for _, e := range p.Entries {
		b.WriteString("\n" + tools.PlanMark(e.Status) + " " + e.Step)
	}
	return b.String()
}
