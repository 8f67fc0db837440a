package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/dsh-acp/dsh-acp/internal/userdir"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// configFileName is the settings file in the user's config directory.
const configFileName = "config.toml"

// notSettable are flags that are actions or one run's choice, not settings.
var notSettable = map[string]bool{"version": true, "resume": true, "continue": true, "cwd": true, "json": true}

// keyNames are what a user may write for the API key, which is not a
// setting (dsh-acp login keeps it in a file of its own).
var keyNames = map[string]bool{"api-key": true, "api_key": true, "apikey": true}

// setting is one top-level key of config.toml, as flag.Value.Set arguments.
type setting struct {
	key    string
	values []string
	// list: the value was a TOML array.
	list bool
	// boolean: the value was a TOML boolean.
	boolean bool
	// kinds are the TOML kinds of the value (or of each element of an
	// array): "string", "integer", "float", "boolean".
	kinds []string
	line  int
}

// configFile is the parsed config.toml; the zero value is "no file".
type configFile struct {
	path     string
	found    bool
	settings []setting
}

// configPath is where config.toml is for this environment; "" when no
// config directory can be named (no HOME: an editor's bare environment).
func configPath(getenv env) string {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		return ""
	}
	return filepath.Join(dir, configFileName)
}

// loadConfigFile reads and parses config.toml. A missing file is no
// settings (at most maxConfigFile bytes, a regular file: a FIFO there must
// not hang the start); an unreadable or malformed one is an error naming the file and
// line, so the agent never starts on a config the user did not mean.
const maxConfigFile = 1 << 20

func loadConfigFile(path string) (*configFile, error) {
	cf := &configFile{path: path}
	if path == "" {
		return cf, nil
	}
	data, err := untrusted.ReadWhole(path, 0, maxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	cf.found = true
	// The stable decoder checks the whole document (syntax, duplicate
	// keys, number forms) and says where a mistake is.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("%s:%d: %v", path, row, de)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lines, err := keyLines(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for key, v := range doc {
		s := setting{key: key, line: lines[key]}
		if err := s.fill(v); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, s.line, key, err)
		}
		cf.settings = append(cf.settings, s)
	}
	// Map order is random: report mistakes and apply settings top down.
	slices.SortFunc(cf.settings, func(a, b setting) int { return a.line - b.line })
	return cf, nil
}

// keyLines maps each top-level key to its line. Tables have a line too, so
// that "[x]" is reported where it is.
func keyLines(data []byte) (map[string]int, error) {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		it := e.Children()
		if e.Kind == unstable.KeyValue {
			it.Next() // the value
		}
		if e.Kind != unstable.KeyValue && e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		if !it.Next() {
			continue
		}
		k := it.Node()
		if _, ok := lines[string(k.Data)]; !ok {
			lines[string(k.Data)] = p.Shape(k.Raw).Start.Line
		}
	}
	return lines, p.Error()
}

// fill turns a decoded TOML value into Set arguments.
func (s *setting) fill(v any) error {
	if arr, ok := v.([]any); ok {
		s.list = true
		for _, e := range arr {
			str, err := scalar(e)
			if err != nil {
				return fmt.Errorf("array element: %w", err)
			}
			s.values = append(s.values, str)
			s.kinds = append(s.kinds, kindOf(e))
		}
		return nil
	}
	if _, ok := v.(map[string]any); ok {
		return errors.New("is a table; every setting is a top-level key (the long name of a flag)")
	}
	_, s.boolean = v.(bool)
	str, err := scalar(v)
	if err != nil {
		return err
	}
	s.values = []string{str}
	s.kinds = []string{kindOf(v)}
	return nil
}

// kindOf names a decoded TOML scalar's kind as TOML does.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

// wantKind is the TOML kind a flag's value is written as: a number for a
// whole-number or decimal flag, true or false for a switch, a string for
// everything else (durations, URLs, names, patterns).
func wantKind(f *flag.Flag) string {
	if isBoolFlag(f) {
		return "boolean"
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64, uint, uint64:
			return "integer"
		case float64:
			return "float"
		}
	}
	return "string"
}

// article is kind with "a" or "an" before it.
func article(kind string) string {
	if strings.HasPrefix(kind, "i") {
		return "an " + kind
	}
	return "a " + kind
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

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("a %T is not a value any flag takes (use a string, number, boolean or array of strings)", v)
}

// repeatable reports a flag that may be given more than once: its setting
// is an array.
func repeatable(f *flag.Flag) bool {
	_, ok := f.Value.(*stringList)
	return ok
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// apply sets fs's flags from the file, except those the environment set
// (fromEnv): flag > environment > file > default. known reports a key
// that is a flag of another command (exec's --yes in a server's file is
// not a mistake). It returns, for each flag set, the line it came from.
func (cf *configFile) apply(fs *flag.FlagSet, known func(string) bool, fromEnv map[string]bool) (map[string]int, error) {
	applied := map[string]int{}
	for _, s := range cf.settings {
		where := fmt.Sprintf("%s:%d", cf.path, s.line)
		f := fs.Lookup(s.key)
		switch {
		case notSettable[s.key]:
			return nil, fmt.Errorf("%s: %s is not a setting (it is one run's choice): remove it", where, echo(s.key))
		case keyNames[strings.ToLower(s.key)]:
			return nil, fmt.Errorf("%s: %s: the API key is not a setting, so that it never sits in a file you may share: remove it, and run dsh-acp login (or set DSH_API_KEY)", where, echo(s.key))
		case f == nil && known(s.key):
			continue
		case f == nil:
			return nil, fmt.Errorf("%s: unknown key %s: a key is the long name of a flag of dsh-acp or dsh-acp exec (see dsh-acp help exec)", where, echo(s.key))
		case fromEnv[s.key]:
			continue
		}
		if err := checkShape(f, s); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", where, s.key, err)
		}
		for _, v := range s.values {
			if err := fs.Set(s.key, v); err != nil {
				return nil, fmt.Errorf("%s: %s: bad value %s: %s", where, s.key, echo(v), badValue(f, err))
			}
		}
		applied[s.key] = s.line
	}
	return applied, nil
}

// checkShape: arrays for repeatable flags, booleans for switches, one
// value for everything else.
func checkShape(f *flag.Flag, s setting) error {
	switch {
	case s.list && !repeatable(f):
		return errors.New("takes one value, not an array")
	case !s.list && repeatable(f):
		return fmt.Errorf("takes an array of strings, e.g. %s = [%s], not %s", f.Name, echo(strings.Join(s.values, "")), article(strings.Join(s.kinds, "")))
	case isBoolFlag(f) && !s.boolean:
		return fmt.Errorf("takes true or false, got %s", echo(strings.Join(s.values, ",")))
	case !isBoolFlag(f) && s.boolean:
		return fmt.Errorf("takes a value, not a boolean (%s)", f.Usage)
	}
	want := wantKind(f)
	for i, got := range s.kinds {
		// A whole number is a number for a decimal setting too.
		if got == want || want == "float" && got == "integer" {
			continue
		}
		what := map[string]string{"integer": "a whole number", "float": "a number"}[want]
		if g, ok := f.Value.(flag.Getter); ok && what == "" {
			if _, ok := g.Get().(time.Duration); ok {
				what = `a duration such as "30s" or "2m"`
			}
		}
		if what == "" {
			what = "a " + want
		}
		if s.list {
			return fmt.Errorf("element %d is %s (%s), want %s", i+1, article(got), echo(s.values[i]), what)
		}
		return fmt.Errorf("is %s (%s), want %s", article(got), echo(s.values[i]), what)
	}
	return nil
}

// badValue says what a flag takes: the flag package's own errors for
// numbers and durations are a bare "parse error".
func badValue(f *flag.Flag, err error) string {
	switch t := fmt.Sprintf("%T", f.Value); {
	case strings.Contains(t, "duration"):
		return `want a duration such as "30s" or "2m"`
	case strings.Contains(t, "int"):
		return "want a whole number"
	case strings.Contains(t, "float"):
		return "want a number"
	}
	return err.Error()
}

// stateDirDefault is --state-dir's default for the commands that take no
// other setting (sessions, rules): DSH_STATE_DIR, else config.toml's
// state-dir, so they read the store the agent writes.
func stateDirDefault(getenv env) (string, error) {
	if dir := getenv.first("DSH_STATE_DIR"); dir != "" {
		return dir, nil
	}
	cf, err := loadConfigFile(configPath(getenv))
	if err != nil {
		return "", err
	}
	for _, s := range cf.settings {
		if s.key == "state-dir" && len(s.values) == 1 {
			return s.values[0], nil
		}
	}
	return "", nil
}
