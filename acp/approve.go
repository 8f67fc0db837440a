package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/permission"
	"github.com/dsh-acp/dsh-acp/sessions"
	"github.com/dsh-acp/dsh-acp/tools"
)

const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optAllowProject = "allow_always_project"
	optRejectOnce   = "reject_once"
)

// ProjectRules are the keys the user allowed "always in this project",
// kept outside the repository and shared by every session of the project.
type ProjectRules interface {
	// Keys returns the keys allowed in the project of cwd.
	Keys(cwd string) (map[string]bool, error)
	// Allow remembers keys for the project of cwd.
	Allow(cwd string, keys ...string) error
}

// What the model is told when a command was not run.
const (
	rejectedText  = "Error: permission denied: the user rejected this command; it was not run"
	withdrawnText = "Error: permission request was cancelled; the command was not run"
	// unattendedText: the client had no one to ask (dsh-acp exec with no
	// terminal) and said so in the answer's _meta; nobody rejected it.
	unattendedText = "Error: permission denied: it was not run: no one could be asked to approve it (dsh-acp exec without a terminal); do not retry it: tell the user what you wanted to run and why"
)

// unattendedMeta is the _meta key of a permission answer given without
// asking anyone: the client refused because no person could be asked.
const unattendedMeta = "unattended"

// approver asks before a call runs when permission.Decide says so: the
// decision reads the call's approval subject alone.
func (a *Agent) approver(s *sessions.Session, conn client, log *zap.Logger) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, call agent.CallInfo) (agent.Approval, error) {
		sub := call.Call.Subject
		// The mode is read once: it decides both whether to ask and
		// whether the call runs confined.
		ans := permission.Decide(permission.Question{
			Mode: s.Mode(), Rules: a.opts.Rules, Remembered: a.remembered(s, log), Subject: sub, Cwd: s.Cwd,
			ReadOnly: sub.Kind == tools.ToolKey && a.opts.MCP.AllowReadOnly && mcpOf(s) != nil && mcpOf(s).readOnly(call),
		})
		switch ans.Action {
		case permission.Refuse:
			log.Info("call denied by rule", zap.String("rule", ans.Rule))
			return agent.Approval{Message: ans.Message}, nil
		case permission.RunSandboxed:
			return agent.Approval{Allowed: true, Sandboxed: true}, nil
		case permission.Run:
			return agent.Approval{Allowed: true}, nil
		}
		if ans.Unknown {
			log.Warn("unknown approval subject", zap.Stringer("kind", sub.Kind))
		}
		name, note := alwaysNames(s.Cwd, sub, ans.Keys, ans.Plain)
		return a.ask(ctx, s, conn, call, ans.Keys, name, note, log)
	})
}

// remembered is what "always" answers pass in s: the session's own, and
// its project's. Deny rules are checked before either.
func (a *Agent) remembered(s *sessions.Session, log *zap.Logger) map[string]bool {
	keys := s.Remembered()
	if a.opts.Project == nil {
		return keys
	}
	project, err := a.opts.Project.Keys(s.Cwd)
	if err != nil {
		// Asked, not allowed: a broken rules file grants nothing.
		log.Warn("project rules not readable", zap.Error(err))
		return keys
	}
	for k := range project {
		keys[k] = true
	}
	return keys
}

// alwaysNames are an "always" option's name for a scope, and a note that
// says in full what the name says short, for the keys an "always" answer
// about sub remembers (permission.Answer.Keys and Plain). "plain" in the
// name says that this very line will still be asked next time (remembered
// keys never pass assignments, file writes or substitutions), and the
// note says why. An editor shows an option's name on one line, so the name
// shows at most maxSubjectRunes of what it remembers; the note, empty when
// the name says it all, names every key.
func alwaysNames(cwd string, sub tools.Subject, keys []string, plainLine bool) (name func(scope string) string, note string) {
	switch sub.Kind {
	case tools.FileWrite:
		return func(scope string) string { return "Always allow edits in `" + cwd + "` in this " + scope }, ""
	case tools.FileRead:
		return func(scope string) string { return "Always allow reading `" + sub.Dir + "` in this " + scope }, ""
	case tools.ToolKey:
		shown, whole := subjectList(keys)
		if !whole {
			note = "“Always” remembers the tool `" + sub.Text + "`."
		}
		return func(scope string) string { return "Always allow " + shown + " in this " + scope }, note
	}
	plain := ""
	if plainLine {
		plain = "plain "
	}
	shown, whole := subjectList(keys)
	switch {
	case plain != "":
		note = "“Always” remembers plain " + backticked(keys) + " commands: a line that sets variables, writes files, substitutes commands or uses shell constructs such as functions or here-documents, as this one does, is still asked."
	case !whole:
		note = "“Always” remembers " + backticked(keys) + " commands."
	}
	return func(scope string) string { return "Always allow " + plain + shown + " commands in this " + scope }, note
}

// maxSubjectRunes bounds what an "always" option's name shows of its keys:
// with the rest of the name, the whole stays within about 64 characters.
const maxSubjectRunes = 32

// subjectList shows keys as an option's name does: backticked, as many as
// fit in maxSubjectRunes and how many more, a key too long for it cut short;
// whole reports that every key is shown in full.
func subjectList(keys []string) (shown string, whole bool) {
	all := backticked(keys)
	if utf8.RuneCountInString(all) <= maxSubjectRunes {
		return all, true
	}
	for n := len(keys) - 1; n >= 1; n-- {
		s := backticked(keys[:n]) + fmt.Sprintf(" and %d more", len(keys)-n)
		if utf8.RuneCountInString(s) <= maxSubjectRunes {
			return s, false
		}
	}
	more := ""
	if len(keys) > 1 {
		more = fmt.Sprintf(" and %d more", len(keys)-1)
	}
	room := maxSubjectRunes - utf8.RuneCountInString(more) - 3
	return "`" + string([]rune(keys[0])[:room]) + "…`" + more, false
}

// backticked is keys as code, comma separated.
func backticked(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = "`" + k + "`"
	}
	return strings.Join(quoted, ", ")
}

// ask asks the editor whether call may run. The request restates the
// call's head (its description, and its whole command when the title shows
// only its first line), with the note on what "always" remembers when its
// option's name says less: the editor shows the request's content in place
// of the call's.
func (a *Agent) ask(ctx context.Context, s *sessions.Session, conn client, call agent.CallInfo, keys []string, alwaysLabel func(scope string) string, note string, log *zap.Logger) (agent.Approval, error) {
	options := []acpsdk.PermissionOption{{Kind: acpsdk.PermissionOptionKindAllowOnce, Name: "Allow once", OptionId: optAllowOnce}}
	if len(keys) > 0 {
		options = append(options, acpsdk.PermissionOption{
			Kind:     acpsdk.PermissionOptionKindAllowAlways,
			Name:     alwaysLabel("session"),
			OptionId: optAllowAlways,
		})
		if a.opts.Project != nil {
			options = append(options, acpsdk.PermissionOption{
				Kind:     acpsdk.PermissionOptionKindAllowAlways,
				Name:     alwaysLabel("project"),
				OptionId: optAllowProject,
			})
		}
	}
	options = append(options, acpsdk.PermissionOption{Kind: acpsdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: optRejectOnce})

	kind := toolKind(call.Call)
	req := acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(s.ID),
		ToolCall: acpsdk.ToolCallUpdate{
			ToolCallId: acpsdk.ToolCallId(call.ID),
			Title:      acpsdk.Ptr(call.Call.Title),
			Kind:       &kind,
			Status:     acpsdk.Ptr(acpsdk.ToolCallStatusPending),
			RawInput:   rawInput(call.Args),
		},
		Options: options,
	}
	if len(keys) == 0 {
		note = ""
	}
	if call.Call.Body != "" || note != "" {
		req.ToolCall.Content = headContent(call)
		if note != "" {
			req.ToolCall.Content = append(req.ToolCall.Content, acpsdk.ToolContent(acpsdk.TextBlock(note)))
		}
	}
	if call.Call.Preview != nil {
		// The question shows the change it asks about.
		req.ToolCall.Content = append(req.ToolCall.Content, changeContent(call.Call.Preview(ctx))...)
	}
	resp, err := conn.RequestPermission(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return agent.Approval{}, ctx.Err()
		}
		return agent.Approval{}, fmt.Errorf("request permission: %w", err)
	}
	switch {
	case resp.Outcome.Cancelled != nil:
		log.Info("permission request cancelled by client")
		return agent.Approval{Message: withdrawnText}, nil
	case resp.Outcome.Selected == nil:
		return agent.Approval{Message: rejectedText}, nil
	case resp.Meta[unattendedMeta] == true && string(resp.Outcome.Selected.OptionId) == optRejectOnce:
		return agent.Approval{Message: unattendedText}, nil
	}
	switch string(resp.Outcome.Selected.OptionId) {
	case optAllowOnce:
		return agent.Approval{Allowed: true}, nil
	case optAllowAlways:
		s.Remember(keys...)
		log.Info("always allowed", zap.Strings("keys", keys))
		return agent.Approval{Allowed: true}, nil
	case optAllowProject:
		if err := a.opts.Project.Allow(s.Cwd, keys...); err != nil {
			// The command was allowed; only the remembering failed, so
			// the session remembers it at least.
			log.Warn("project rule not stored; remembered for this session", zap.Error(err))
		}
		s.Remember(keys...)
		log.Info("always allowed in project", zap.Strings("keys", keys))
		return agent.Approval{Allowed: true}, nil
	}
	return agent.Approval{Message: rejectedText}, nil
}

// rawInput is the arguments as JSON for the editor, or the raw text when the
// model sent something that is not JSON.
//
// Long strings are clipped to maxRawString: the editor only shows them, and
// a multi-megabyte argument would otherwise become a frame over the size a
// client reads (the SDK's own limit is 10 MiB).
func rawInput(args string) any {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return clipString(args)
	}
	return clipValue(v)
}

// maxRawString bounds each string of a rawInput.
const maxRawString = 64 << 10

func clipValue(v any) any {
	switch x := v.(type) {
	case string:
		return clipString(x)
	case []any:
		for i := range x {
			x[i] = clipValue(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = clipValue(x[k])
		}
	}
	return v
}

func clipString(s string) string {
	if len(s) <= maxRawString {
		return s
	}
	cut := maxRawString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%d more bytes]", s[:cut], len(s)-cut)
}
