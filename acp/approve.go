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

// approver asks before a call runs, from the call's approval subject alone:
// --deny rules veto, mode sandbox passes commands confined, --allow rules
// and "always" answers pass, mode auto passes, everything else asks the
// editor. A call without a subject (the
// task tools: they touch only the session's own tasks; arguments that will
// not run) never asks.
func (a *Agent) approver(s *sessions.Session, conn client, log *zap.Logger) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, call agent.CallInfo) (agent.Approval, error) {
		sub := call.Call.Subject
		var d permission.Decision
		switch sub.Kind {
		case tools.NoApproval:
			return agent.Approval{Allowed: true}, nil
		case tools.ShellCommand:
			d = a.opts.Rules.Check(sub.Text, a.remembered(s, log))
		case tools.ToolKey:
			d = a.opts.Rules.CheckKey(sub.Text, a.remembered(s, log))
		case tools.FileRead, tools.FileWrite:
			d = a.opts.Rules.CheckFile(fileScheme(sub), sub.Text, a.remembered(s, log))
		default:
			// A subject no rule can read is asked in every mode, and
			// "always" is not offered for it.
			log.Warn("unknown approval subject", zap.Stringer("kind", sub.Kind))
			return a.ask(ctx, s, conn, call, nil, nil, "", log)
		}
		// The mode is read once: it decides both whether to ask and
		// whether the call runs confined. Ask runs what the user (or a
		// rule) allowed unconfined; Auto in sandbox runs every command
		// confined without asking; Full access runs it all unconfined.
		// An MCP tool cannot be confined (its server is the editor's): in
		// Auto in sandbox it is asked as in Ask.
		switch mode := s.Mode(); {
		case d.Verdict == permission.Deny:
			log.Info("call denied by rule", zap.String("rule", d.Rule))
			return agent.Approval{Message: fmt.Sprintf("Error: permission denied: the %s matches the deny rule %q; it was not run", deniedWhat(sub), d.Rule)}, nil
		case mode == sessions.ModeSandbox && (sub.Kind == tools.ShellCommand || sub.Kind == tools.FileRead || sub.Kind == tools.FileWrite):
			// A file tool's operations get the policy a confined
			// command gets.
			return agent.Approval{Allowed: true, Sandboxed: true}, nil
		case d.Verdict == permission.Allow, mode == sessions.ModeAuto:
			return agent.Approval{Allowed: true}, nil
		case sub.Kind == tools.FileRead && sub.Inside:
			// Reading the session's own directory is what it is for.
			return agent.Approval{Allowed: true}, nil
		case sub.Kind == tools.ToolKey && a.opts.MCP.AllowReadOnly && mcpOf(s) != nil && mcpOf(s).readOnly(call):
			log.Info("read-only mcp tool allowed", zap.String("tool", sub.Text))
			return agent.Approval{Allowed: true}, nil
		}
		keys, name, note := always(s, sub)
		return a.ask(ctx, s, conn, call, keys, name, note, log)
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

// deniedWhat names the subject in a deny message.
func deniedWhat(sub tools.Subject) string {
	switch sub.Kind {
	case tools.ShellCommand:
		return "command"
	case tools.FileRead, tools.FileWrite:
		return "path " + sub.Text
	}
	return "tool call"
}

// fileScheme is the rules' scheme of a file tool's subject.
func fileScheme(sub tools.Subject) string {
	if sub.Kind == tools.FileWrite {
		return permission.EditScheme
	}
	return permission.ReadScheme
}

// always is what an "always" answer remembers (its keys), the option's
// name for a scope, and a note that says in full what the name says short.
// For a command line the keys are its programs; "plain" in the name says
// that this very line will still be asked next time (remembered keys never
// pass assignments, file writes or substitutions), and the note says why.
// (A file tool's answer remembers a directory, and says which.)
// An editor shows an option's name on one line, so the name shows at most
// maxSubjectRunes of what it remembers; the note, empty when the name says
// it all, names every key. No keys: no "always" option.
func always(s *sessions.Session, sub tools.Subject) (keys []string, name func(scope string) string, note string) {
	switch {
	case sub.Kind == tools.FileWrite && sub.Inside:
		return []string{permission.FilePattern(permission.EditScheme, s.Cwd)}, func(scope string) string {
			return "Always allow edits in `" + s.Cwd + "` in this " + scope
		}, ""
	case sub.Kind == tools.FileWrite:
		// An edit outside the session's directory is asked each time.
		return nil, nil, ""
	case sub.Kind == tools.FileRead:
		return []string{permission.FilePattern(permission.ReadScheme, sub.Dir)}, func(scope string) string {
			return "Always allow reading `" + sub.Dir + "` in this " + scope
		}, ""
	}
	if sub.Kind == tools.ToolKey {
		shown, whole := subjectList([]string{sub.Text})
		if !whole {
			note = "“Always” remembers the tool `" + sub.Text + "`."
		}
		return []string{sub.Text}, func(scope string) string { return "Always allow " + shown + " in this " + scope }, note
	}
	keys = permission.Keys(sub.Text)
	plain := ""
	if len(keys) == 0 {
		keys = permission.Programs(sub.Text)
		plain = "plain "
	}
	shown, whole := subjectList(keys)
	switch {
	case plain != "":
		note = "“Always” remembers plain " + backticked(keys) + " commands: a line that sets variables, writes files, substitutes commands or uses shell constructs such as functions or here-documents, as this one does, is still asked."
	case !whole:
		note = "“Always” remembers " + backticked(keys) + " commands."
	}
	return keys, func(scope string) string { return "Always allow " + plain + shown + " commands in this " + scope }, note
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
