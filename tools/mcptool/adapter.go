package mcptool

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/dsh-acp/dsh-acp/tools"
)

// This file is the only one that knows the tools package: it adapts a Tool
// (Title, Kind, ApprovalKey, Invoke) to tools.Tool.

var _ tools.Tool = (*Tool)(nil)

// Prepare describes a call for the editor and the approver and returns its
// run. The subject is always the tool's key, read-only or not: whether a
// read-only tool may skip the question (--allow-mcp-readonly) is the
// approver's policy, and deny rules must see every call.
func (t *Tool) Prepare(_ tools.Caller, args json.RawMessage) tools.Prepared {
	args = append(json.RawMessage(nil), args...)
	return tools.Prepared{
		Call: tools.Call{
			// A server names its tools: nothing in a name may hide
			// part of the title.
			Title:   strings.ReplaceAll(tools.Visible(t.Title(args)), "\n", " "),
			Kind:    tools.Kind(t.Kind()),
			Subject: tools.Key(t.ApprovalKey()),
		},
		Run: func(ctx context.Context, _ tools.Live) tools.Result {
			return toResult(t.Invoke(ctx, args))
		},
	}
}

// toResult maps an Outcome: rawOutput is the tool's structured result
// when the server answered, else (a call that failed) tools.ErrorOutput;
// the truncation note is the one note.
func toResult(o Outcome) tools.Result {
	r := tools.Result{Text: o.Text, IsError: o.IsError, Images: o.Images}
	switch {
	case o.Structured != nil:
		r.Raw = o.Structured
	case o.IsError:
		r.Raw = tools.ErrorOutput{IsError: true}
	}
	if o.Truncated {
		r.Notes = []string{truncationNote(o.SpillPath)}
	}
	return r
}

func removeFile(p string) error { return os.Remove(p) }
