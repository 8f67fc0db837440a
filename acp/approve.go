package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/turn"
)

const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optAllowProject = "allow_always_project"
	optRejectOnce   = "reject_once"
)

// unattendedMeta is the _meta key of a permission answer given without
// asking anyone: the client refused because no person could be asked.
const unattendedMeta = "unattended"

// asker asks the editor whether a call of a session may run: the one
// decision acp leaves to the user (turn decides the rest).
type asker struct {
	sid  acpsdk.SessionId
	conn client
}

var _ turn.Asker = asker{}

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
		// The root the edit is in: the cwd or another of the session's.
		dir := sub.Root
		if dir == "" {
			dir = cwd
		}
		return func(scope string) string { return "Always allow edits in `" + dir + "` in this " + scope }, ""
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

// Ask asks the editor whether the call may run. The request restates the
// call's head (its description, and its whole command when the title shows
// only its first line), with the note on what "always" remembers when its
// option's name says less: the editor shows the request's content in place
// of the call's.
func (k asker) Ask(ctx context.Context, q turn.Question) (turn.Reply, error) {
	call := q.Call
	req := acpsdk.RequestPermissionRequest{
		SessionId: k.sid,
		ToolCall: acpsdk.ToolCallUpdate{
			ToolCallId: acpsdk.ToolCallId(call.ID),
			Title:      acpsdk.Ptr(call.Call.Title),
			Kind:       acpsdk.Ptr(toolKind(call.Call)),
			Status:     acpsdk.Ptr(acpsdk.ToolCallStatusPending),
			RawInput:   rawInput(call.Args),
		},
		Options: permissionOptions(q),
	}
	note := ""
	if len(q.Keys) > 0 {
		_, note = alwaysNames(q.Cwd, call.Call.Subject, q.Keys, q.Plain)
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
	resp, err := k.conn.RequestPermission(ctx, req)
	if err != nil {
		return turn.Rejected, err
	}
	return reply(resp), nil
}

// permissionOptions are the answers offered: once, "always" in the session
// (and the project) when there is something to remember, reject.
func permissionOptions(q turn.Question) []acpsdk.PermissionOption {
	options := []acpsdk.PermissionOption{{Kind: acpsdk.PermissionOptionKindAllowOnce, Name: "Allow once", OptionId: optAllowOnce}}
	if len(q.Keys) > 0 {
		name, _ := alwaysNames(q.Cwd, q.Call.Call.Subject, q.Keys, q.Plain)
		options = append(options, acpsdk.PermissionOption{Kind: acpsdk.PermissionOptionKindAllowAlways, Name: name("session"), OptionId: optAllowAlways})
		if q.Project {
			options = append(options, acpsdk.PermissionOption{Kind: acpsdk.PermissionOptionKindAllowAlways, Name: name("project"), OptionId: optAllowProject})
		}
	}
	return append(options, acpsdk.PermissionOption{Kind: acpsdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: optRejectOnce})
}

// reply is the editor's answer as the turn reads it.
func reply(resp acpsdk.RequestPermissionResponse) turn.Reply {
	switch {
	case resp.Outcome.Cancelled != nil:
		return turn.Withdrawn
	case resp.Outcome.Selected == nil:
		return turn.Rejected
	case resp.Meta[unattendedMeta] == true && string(resp.Outcome.Selected.OptionId) == optRejectOnce:
		return turn.Unattended
	}
	switch string(resp.Outcome.Selected.OptionId) {
	case optAllowOnce:
		return turn.AllowOnce
	case optAllowAlways:
		return turn.AllowSession
	case optAllowProject:
		return turn.AllowProject
	}
	return turn.Rejected
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
