package filetool

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/tools"
)

// What one read returns at most.
const (
	maxReadLines = 2000
	maxReadBytes = 64 << 10
	// maxLineBytes: a longer line is cut, with a mark.
	maxLineBytes = 2000
)

type readTool struct{ *base }

func (*readTool) Name() string { return NameRead }

func (*readTool) Description() string {
	return "Read a UTF-8 text file, each line numbered. At most 2000 lines and 64 KiB per call (longer lines are cut); the result says how to read on with offset. Paths are relative to the session's directory."
}

func (*readTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"integer","description":"first line to return, 1-based"},"limit":{"type":"integer","description":"how many lines"}},"required":["file_path"]}`)
}

// ReadOutput is read's raw output for the editor.
type ReadOutput struct {
	Path string `json:"path"`
	// From and To are the 1-based lines returned; Lines the file's count.
	From  int  `json:"from,omitempty"`
	To    int  `json:"to,omitempty"`
	Lines int  `json:"lines"`
	Error bool `json:"isError,omitempty"`
}

func (t *readTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	obj, err := tools.ParseArgs(raw)
	var p string
	var offset, limit int
	if err == nil {
		p, err = obj.NonEmpty("file_path")
	}
	if err == nil {
		offset, err = obj.Positive("offset")
	}
	if err == nil {
		limit, err = obj.Positive("limit")
	}
	var path string
	if err == nil {
		path, err = absPath(caller, p)
	}
	if err != nil {
		return failed("Read", tools.KindRead, err)
	}
	offset = max(offset, 1)
	return tools.Prepared{
		Call: tools.Call{Title: "Read " + shownPath(caller, path), Kind: tools.KindRead,
			Subject: readSubject(caller, path, dirOf(path))},
		Run: func(ctx context.Context, _ tools.Live) tools.Result {
			f, err := t.open(ctx, caller)
			if err != nil {
				return errorResult(opError(caller, path, err))
			}
			text, err := f.text(ctx, path)
			if err != nil {
				return errorResult(opError(caller, path, err))
			}
			r := numbered(text, offset, limit, shownPath(caller, path))
			out := r.result
			out.Raw = ReadOutput{Path: path, From: r.from, To: r.to, Lines: r.lines, Error: out.IsError}
			if !out.IsError {
				line := r.from - 1
				out.Locations = []tools.Location{{Path: path, Line: &line}}
			}
			return out
		},
	}
}

// dirOf is the directory an "always" answer about reading path covers.
func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "/"
}

type numberedText struct {
	result          tools.Result
	from, to, lines int
}

// numbered is text's lines from offset, limit of them (0: as many as fit),
// each "<n>\t<line>", then how to read on when lines were left.
func numbered(text string, offset, limit int, name string) numberedText {
	total := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++
	}
	if text == "" {
		return numberedText{result: tools.Result{Text: "(empty file)"}}
	}
	if offset > total {
		return numberedText{result: errorResult(fmt.Sprintf("offset %d is past the end of %s (%d lines)", offset, name, total)), lines: total}
	}
	want := maxReadLines
	if limit > 0 && limit < want {
		want = limit
	}
	var b strings.Builder
	n, rest := 0, text
	for i := 1; i < offset; i++ {
		_, rest, _ = strings.Cut(rest, "\n")
	}
	last := offset - 1
	for n < want && rest != "" {
		line, after, _ := strings.Cut(rest, "\n")
		line = strings.TrimSuffix(line, "\r")
		if len(line) > maxLineBytes {
			end := maxLineBytes
			for end > 0 && !utf8.RuneStart(line[end]) {
				end--
			}
			line = line[:end] + fmt.Sprintf("… [line cut: %d more bytes]", len(line)-end)
		}
		entry := strconv.Itoa(last+1) + "\t" + line + "\n"
		if b.Len()+len(entry) > maxReadBytes && n > 0 {
			break
		}
		b.WriteString(entry)
		n++
		last++
		rest = after
	}
	if last < total {
		fmt.Fprintf(&b, "[lines %d-%d of %d; read on with offset %d]", offset, last, total, last+1)
	}
	return numberedText{result: tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}, from: offset, to: last, lines: total}
}
