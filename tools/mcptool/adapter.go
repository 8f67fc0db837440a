package mcptool

import (
	"context"
	"encoding/json"
	"os"

	"github.com/dsh-acp/dsh-acp/tools"
)

// This file is the only one that knows the tools package: it adapts a Tool
// (Title, Kind, Invoke) to tools.Tool.

var _ tools.Tool = (*Tool)(nil)

// Describe is the editor's presentation of a call before it runs.
func (t *Tool) Describe(_ tools.Caller, args json.RawMessage) tools.Display {
	return tools.Display{Title: t.Title(args), Kind: t.Kind()}
}

// Run calls the tool; see Invoke.
func (t *Tool) Run(ctx context.Context, call tools.Call) tools.Result {
	o := t.Invoke(ctx, call.Args)
	d := t.Describe(call.Caller, call.Args)
	d.Truncated = o.Truncated
	if o.SpillPath != "" {
		d.SpillPaths = []string{o.SpillPath}
	}
	return tools.Result{Text: o.Text, IsError: o.IsError, Display: d}
}

func removeFile(p string) error { return os.Remove(p) }
