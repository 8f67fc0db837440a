package filetool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

type writeTool struct{ *base }

func (*writeTool) Name() string { return NameWrite }

func (*writeTool) Description() string {
	return "Create or replace a text file with content (parent directories are made). To change part of a file, use edit."
}

func (*writeTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}`)
}

type editTool struct{ *base }

func (*editTool) Name() string { return NameEdit }

func (*editTool) Description() string {
	return "Replace old_string with new_string in a text file, literally (no regex). old_string must occur exactly once, unless replace_all is true; include enough surrounding lines to make it unique."
}

func (*editTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"]}`)
}

// WriteOutput is write's and edit's raw output for the editor.
type WriteOutput struct {
	Path         string `json:"path"`
	Created      bool   `json:"created,omitempty"`
	Replacements int    `json:"replacements,omitempty"`
	Error        bool   `json:"isError,omitempty"`
}

// change is one file's new text, made from its old one.
type change func(old string, existed bool) (text string, replacements int, err error)

func (t *writeTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	obj, err := tools.ParseArgs(raw)
	var p, content string
	if err == nil {
		p, err = obj.NonEmpty("file_path")
	}
	if err == nil {
		content, err = obj.String("content", true)
	}
	var path string
	if err == nil {
		path, err = absPath(caller, p)
	}
	if err != nil {
		return failed("Write", tools.KindEdit, err)
	}
	return t.prepare(caller, "Write", path, func(string, bool) (string, int, error) { return content, 0, nil })
}

func (t *editTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	obj, err := tools.ParseArgs(raw)
	var p, oldS, newS string
	var all bool
	if err == nil {
		p, err = obj.NonEmpty("file_path")
	}
	if err == nil {
		oldS, err = obj.NonEmpty("old_string")
	}
	if err == nil {
		newS, err = obj.String("new_string", true)
	}
	if err == nil {
		all, err = obj.Bool("replace_all")
	}
	var path string
	if err == nil {
		path, err = absPath(caller, p)
	}
	if err == nil && oldS == newS {
		err = tools.ArgError("old_string and new_string are the same; there is nothing to change")
	}
	if err != nil {
		return failed("Edit", tools.KindEdit, err)
	}
	name := shownPath(caller, path)
	return (&writeTool{t.base}).prepare(caller, "Edit", path, func(old string, existed bool) (string, int, error) {
		if !existed {
			return "", 0, tools.ArgError(fmt.Sprintf("%s does not exist; write creates a file", name))
		}
		n := strings.Count(old, oldS)
		switch {
		case n == 0:
			return "", 0, tools.ArgError(fmt.Sprintf("old_string was not found in %s; read the file to see its current text", name))
		case n > 1 && !all:
			return "", 0, tools.ArgError(fmt.Sprintf("old_string occurs %d times in %s; include more surrounding lines to make it unique, or set replace_all to replace every one", n, name))
		}
		return strings.ReplaceAll(old, oldS, newS), n, nil
	})
}

// prepare is write's and edit's call: the question shows the change, the
// run makes it and shows what changed.
func (t *writeTool) prepare(caller tools.Caller, verb, path string, edit change) tools.Prepared {
	name := shownPath(caller, path)
	return tools.Prepared{
		Call: tools.Call{Title: verb + " " + name, Kind: tools.KindEdit,
			Subject: writeSubject(caller, path),
			Preview: func(ctx context.Context) []tools.Change {
				f, err := t.open(ctx, caller)
				if err != nil {
					return nil
				}
				old, existed, err := f.current(ctx, path)
				if err != nil {
					return nil
				}
				text, _, err := edit(old, existed)
				if err != nil {
					return nil
				}
				cs, _ := bashtool.ShowChanges([]changes.Change{ownChange(path, old, existed, text)})
				return cs
			},
		},
		Run: func(ctx context.Context, _ tools.Live) tools.Result {
			f, err := t.open(ctx, caller)
			if err != nil {
				return writeError(caller, path, err)
			}
			old, existed, err := f.current(ctx, path)
			if err != nil {
				return writeError(caller, path, err)
			}
			text, n, err := edit(old, existed)
			if err != nil {
				return writeError(caller, path, err)
			}
			mark := t.measure(caller)
			err = f.write(ctx, path, text)
			measured := mark.End()
			if err != nil {
				return writeError(caller, path, err)
			}
			r := tools.Result{Raw: WriteOutput{Path: path, Created: !existed, Replacements: n}}
			switch {
			case verb == "Edit" && n == 1:
				r.Text = "Edited " + name
			case verb == "Edit":
				r.Text = fmt.Sprintf("Edited %s: %d replacements", name, n)
			case existed:
				r.Text = fmt.Sprintf("Wrote %s (%s)", name, lineCount(text))
			default:
				r.Text = fmt.Sprintf("Created %s (%s)", name, lineCount(text))
			}
			r.Changes, r.Locations, r.Changed = shown(measured, ownChange(path, old, existed, text))
			return r
		},
	}
}

// current is path's text now, and whether the file exists.
func (f *files) current(ctx context.Context, path string) (string, bool, error) {
	old, err := f.text(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return old, err == nil, err
}

func writeError(caller tools.Caller, path string, err error) tools.Result {
	r := errorResult(opError(caller, path, err))
	r.Raw = WriteOutput{Path: path, Error: true}
	return r
}

// lineCount says how many lines text has.
func lineCount(text string) string {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

// measure starts measuring the session's directories, as a command's run is
// measured, so the tracker records the write as the call's change (what a
// command running beside it does not report again, what undo takes back);
// nil without a tracker or a directory.
func (b *base) measure(caller tools.Caller) *changes.Mark {
	if b.tracker == nil || caller.Cwd == "" {
		return nil
	}
	return b.tracker.BeginAll(caller.SessionID, append([]string{caller.Cwd}, caller.Roots...)...)
}

// ownChange is the tool's own view of its change to path.
func ownChange(path, old string, existed bool, text string) changes.Change {
	c := changes.Change{Path: path, Op: changes.Modified,
		Old: changes.Side{Size: int64(len(old)), Text: old, Known: true},
		New: changes.Side{Size: int64(len(text)), Text: text, Known: true}}
	if !existed {
		c.Op, c.Old = changes.Created, changes.Side{}
	}
	return c
}

// shown is what the editor is shown: what was measured, as a command's
// changes are, and the tool's own change when the measure did not see the
// file (outside the session's directory, no tracker, a tree too large).
func shown(measured []changes.Change, own changes.Change) ([]tools.Change, []tools.Location, []tools.FileChange) {
	seen := false
	for _, c := range measured {
		if c.Path == own.Path {
			seen = true
		}
	}
	if !seen {
		measured = append(measured, own)
	}
	cs, locs := bashtool.ShowChanges(measured)
	return cs, locs, bashtool.Undoable(measured)
}
