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
)

const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optRejectOnce  = "reject_once"
)

// What the model is told when a command was not run.
const (
	rejectedText  = "Error: permission denied: the user rejected this command; it was not run"
	withdrawnText = "Error: permission request was cancelled; the command was not run"
)

// approver asks before bash runs: --deny rules veto, --allow rules and
// "always" answers pass, mode auto passes, everything else asks the editor.
// bash_output and bash_kill never ask: they touch only the session's own
// tasks (the tool refuses others').
func (a *Agent) approver(s *sessions.Session, conn client, log *zap.Logger) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, call agent.CallInfo) (agent.Approval, error) {
		if call.Name != "bash" {
			return agent.Approval{Allowed: true}, nil
		}
		command, ok := commandArg(call.Args)
		if !ok {
			// The tool rejects these arguments without running anything.
			return agent.Approval{Allowed: true}, nil
		}
		d := a.opts.Rules.Check(command, s.Remembered())
		switch {
		case d.Verdict == permission.Deny:
			log.Info("command denied by rule", zap.String("rule", d.Rule))
			return agent.Approval{Message: fmt.Sprintf("Error: permission denied: the command matches the deny rule %q; it was not run", d.Rule)}, nil
		case d.Verdict == permission.Allow, s.Mode() == sessions.ModeAuto:
			return agent.Approval{Allowed: true}, nil
		}
		return a.ask(ctx, s, conn, call, command, log)
	})
}

// commandArg reads the "command" property exactly as the bash tool does: by
// its exact, case-sensitive key. (Decoding into a struct would match
// "Command" or "COMMAND" too, case-insensitively, so a model could have one
// command checked against the rules and another one run.) ok is false when
// the tool will refuse the arguments without running anything.
func commandArg(args string) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return "", false
	}
	var command string
	if json.Unmarshal(obj["command"], &command) != nil || strings.TrimSpace(command) == "" {
		return "", false
	}
	return command, true
}

func (a *Agent) ask(ctx context.Context, s *sessions.Session, conn client, call agent.CallInfo, command string, log *zap.Logger) (agent.Approval, error) {
	options := []acpsdk.PermissionOption{{Kind: acpsdk.PermissionOptionKindAllowOnce, Name: "Allow once", OptionId: optAllowOnce}}
	// "Always" remembers the line's programs. Its name says exactly that,
	// and says so when this very line will still be asked next time
	// (remembered keys never pass assignments, file writes or
	// substitutions).
	keys := permission.Keys(command)
	name := alwaysName(keys)
	if len(keys) == 0 {
		keys = permission.Programs(command)
		name = alwaysName(keys) + " (lines like this one, which set variables, write files or substitute commands, are still asked)"
	}
	if len(keys) > 0 {
		options = append(options, acpsdk.PermissionOption{
			Kind:     acpsdk.PermissionOptionKindAllowAlways,
			Name:     name,
			OptionId: optAllowAlways,
		})
	}
	options = append(options, acpsdk.PermissionOption{Kind: acpsdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: optRejectOnce})

	kind := acpsdk.ToolKind(call.Display.Kind)
	resp, err := conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(s.ID),
		ToolCall: acpsdk.ToolCallUpdate{
			ToolCallId: acpsdk.ToolCallId(call.ID),
			Title:      acpsdk.Ptr(call.Display.Title),
			Kind:       &kind,
			Status:     acpsdk.Ptr(acpsdk.ToolCallStatusPending),
			RawInput:   rawInput(call.Args),
		},
		Options: options,
	})
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
	}
	switch string(resp.Outcome.Selected.OptionId) {
	case optAllowOnce:
		return agent.Approval{Allowed: true}, nil
	case optAllowAlways:
		s.Remember(keys...)
		log.Info("always allowed", zap.Strings("keys", keys))
		return agent.Approval{Allowed: true}, nil
	}
	return agent.Approval{Message: rejectedText}, nil
}

// alwaysName says exactly what "always" will remember.
func alwaysName(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = "`" + k + "`"
	}
	return "Always allow " + strings.Join(quoted, ", ") + " commands in this session"
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
