package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// FileName is the settings file in the user's config directory.
const FileName = "config.toml"

// maxFile bounds what is read of config.toml: a megabyte is far more than
// any settings file; a bigger one is a mistake, not a config.
const maxFile = 1 << 20

// File is config.toml as read: the zero value (or Found false) is "no
// file", which sets nothing.
type File struct {
	// Path is where the file is looked for; "" when no config directory
	// can be named (no HOME: an editor's bare environment).
	Path  string
	Found bool
	// Entries are the top-level keys, top down.
	Entries []Entry
}

// Entry is one top-level key of config.toml.
type Entry struct {
	Key  string
	Line int
	// Values are the value (or each element of an array) as a flag's Set
	// takes it; Kinds their TOML kinds: "string", "integer", "float",
	// "boolean".
	Values []string
	Kinds  []string
	// List: the value was a TOML array.
	List bool
}

// Lookup is the entry of key; ok false when the file has none.
func (f *File) Lookup(key string) (Entry, bool) {
	for _, e := range f.Entries {
		if e.Key == key {
			return e, true
		}
	}
	return Entry{}, false
}

// FileError is a mistake in config.toml, at a line of it.
type FileError struct {
	Path string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// LoadFile reads and parses config.toml once. A missing file is no
// settings (at most maxFile bytes, a regular file: a FIFO there must not
// hang the start); an unreadable or malformed one is an error naming the
// file and line, so the agent never starts on a config the user did not
// mean.
func LoadFile(path string) (*File, error) {
	f := &File{Path: path}
	if path == "" {
		return f, nil
	}
	data, err := untrusted.ReadWhole(path, 0, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	f.Found = true
	// A byte-order mark, as Windows editors write one, is not part of the
	// document (TOML is UTF-8, where it means nothing).
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if f.Entries, err = parseTOML(path, data); err != nil {
		return nil, err
	}
	return f, nil
}

// parsed is one top-level expression: an entry, or the error its value
// is (a table where a setting was wanted), reported once the whole
// document is known to be well-formed.
type parsed struct {
	entry Entry
	err   error
}

// parseTOML is the one pass over the document: the parser checks the
// syntax and number forms; duplicate keys and tables are refused here.
func parseTOML(path string, data []byte) ([]Entry, error) {
	var p unstable.Parser
	p.Reset(data)
	var all []parsed
	seen := map[string]int{}
	var dup error
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.KeyValue && e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		x := expression(&p, e)
		if first, ok := seen[x.entry.Key]; ok && dup == nil {
			dup = &FileError{Path: path, Line: x.entry.Line, Err: fmt.Errorf("toml: key %s is already defined (line %d)", echo(x.entry.Key), first)}
		}
		if _, ok := seen[x.entry.Key]; !ok {
			seen[x.entry.Key] = x.entry.Line
		}
		all = append(all, x)
	}
	if err := p.Error(); err != nil {
		return nil, syntaxError(path, data, err)
	}
	if dup != nil {
		return nil, dup
	}
	entries := make([]Entry, 0, len(all))
	for _, x := range all {
		if x.err != nil {
			return nil, &FileError{Path: path, Line: x.entry.Line, Err: fmt.Errorf("%s: %w", x.entry.Key, x.err)}
		}
		entries = append(entries, x.entry)
	}
	return entries, nil
}

// expression reads one key = value, or a table header, which is an error
// (every setting is a top-level key).
func expression(p *unstable.Parser, e *unstable.Node) parsed {
	var value *unstable.Node
	if e.Kind == unstable.KeyValue {
		value = e.Value()
	}
	keys := e.Key()
	var x parsed
	for n := 0; keys.Next(); n++ {
		k := keys.Node()
		if n == 0 {
			x.entry.Key = string(k.Data)
			x.entry.Line = p.Shape(k.Raw).Start.Line
		} else {
			// a.b = 1 makes a a table.
			value = nil
		}
	}
	if value == nil || value.Kind == unstable.InlineTable {
		x.err = errors.New("is a table; every setting is a top-level key (the long name of a flag)")
		return x
	}
	x.err = x.entry.fill(value)
	return x
}

// fill turns a TOML value into Set arguments.
func (e *Entry) fill(v *unstable.Node) error {
	if v.Kind != unstable.Array {
		s, kind, err := scalar(v)
		if err != nil {
			return err
		}
		e.Values, e.Kinds = []string{s}, []string{kind}
		return nil
	}
	e.List = true
	e.Values, e.Kinds = []string{}, []string{}
	for it := v.Children(); it.Next(); {
		s, kind, err := scalar(it.Node())
		if err != nil {
			return fmt.Errorf("array element: %w", err)
		}
		e.Values = append(e.Values, s)
		e.Kinds = append(e.Kinds, kind)
	}
	return nil
}

// scalar is a string, number or boolean as Set takes it, and its kind.
func scalar(v *unstable.Node) (value, kind string, err error) {
	switch v.Kind {
	case unstable.String:
		return string(v.Data), "string", nil
	case unstable.Bool:
		return string(v.Data), "boolean", nil
	case unstable.Integer:
		n, err := parseInteger(string(v.Data))
		return strconv.FormatInt(n, 10), "integer", err
	case unstable.Float:
		f, err := parseFloat(string(v.Data))
		return strconv.FormatFloat(f, 'g', -1, 64), "float", err
	}
	what := map[unstable.Kind]string{unstable.LocalDate: "a date", unstable.LocalTime: "a time", unstable.LocalDateTime: "a date-time", unstable.DateTime: "a date-time", unstable.Array: "an array", unstable.InlineTable: "a table"}[v.Kind]
	if what == "" {
		what = "a " + strings.ToLower(v.Kind.String())
	}
	return "", "", fmt.Errorf("%s is not a value any flag takes (use a string, number, boolean or array of strings)", what)
}

// parseInteger reads a TOML integer, whose form the parser checked:
// underscores between digits, 0x, 0o and 0b prefixes.
func parseInteger(raw string) (int64, error) {
	s := strings.ReplaceAll(raw, "_", "")
	base := 10
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x':
			base, s = 16, s[2:]
		case 'o':
			base, s = 8, s[2:]
		case 'b':
			base, s = 2, s[2:]
		}
	}
	n, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		return 0, fmt.Errorf("integer %s is out of range", echo(raw))
	}
	return n, nil
}

// parseFloat reads a TOML float: underscores, inf and nan with a sign.
func parseFloat(raw string) (float64, error) {
	s := strings.ReplaceAll(raw, "_", "")
	switch strings.TrimLeft(s, "+-") {
	case "inf":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("float %s is out of range", echo(raw))
	}
	return f, nil
}

// syntaxError names the line of a parser error (its highlight is part of
// the document).
func syntaxError(path string, data []byte, err error) error {
	var pe *unstable.ParserError
	if !errors.As(err, &pe) {
		return &FileError{Path: path, Err: err}
	}
	// A highlight shares the document's array: the bytes between its
	// start and the array's end say where it is. One that does not (or an
	// error at the end, which highlights nothing) is at the last line.
	offset := len(data)
	if o := cap(data) - cap(pe.Highlight); len(pe.Highlight) > 0 && o >= 0 && o+len(pe.Highlight) <= len(data) {
		offset = o
	}
	line := 1 + strings.Count(string(data[:offset]), "\n")
	return &FileError{Path: path, Line: line, Err: fmt.Errorf("toml: %s", pe.Message)}
}

// maxEcho bounds what an error repeats of a key or value the file holds
// (a megabyte-long key must not come back whole).
const maxEcho = 64

// echo is s quoted, cut to maxEcho bytes (at a rune boundary) with the
// length said.
func echo(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
