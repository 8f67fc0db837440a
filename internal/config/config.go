// Package config is the settings table: each setting's flag, environment
// variable, config.toml key, kind, default and validation, read once —
// the flag set built once, the environment read once, config.toml parsed
// once — with each value knowing where it came from (a flag, the
// environment, a line of config.toml, the default). Precedence: flag >
// environment > config.toml > default; a repeatable setting's flags add to
// the file's list.
//
// It knows nothing of the agent's behaviour: the command states the
// table (names, defaults and checks) and wires the values.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Kind is how a setting is written and read.
type Kind uint8

const (
	// String is any text: a name, a URL, a path, a mode.
	String Kind = iota
	// Bool is a switch: on when the flag is given, true or false in the file.
	Bool
	// Int is a whole number.
	Int
	// Float is a number.
	Float
	// Duration is Go's form: 90s, 2m, 1h30m.
	Duration
	// List is repeatable: each flag adds one string, the file gives an array.
	List
)

// Setting is one row of the table.
type Setting struct {
	// Name is the flag's long name and the key in config.toml.
	Name string
	// Env is the environment variable that sets it; "" for none.
	Env  string
	Kind Kind
	// Var receives the value: *string, *bool, *int, *float64,
	// *time.Duration or *[]string, by Kind.
	Var any
	// Default is the value when nothing sets it, of Var's element type;
	// nil is the zero value.
	Default any
	// Usage is the flag's help; a name in backquotes names its argument.
	Usage string
	// Check validates the value once every setting is read (it may read
	// others' values); its error is blamed on where this value came from.
	Check func() error
	// OneRun: an action or one run's choice (--version, --resume), not a
	// key config.toml may hold.
	OneRun bool
	// Command is the one command that takes it; "" for every command.
	Command string
}

// Origin is where a value came from.
type Origin uint8

const (
	FromDefault Origin = iota
	FromEnv
	FromFile
	FromFlag
)

// Source is where one setting's value came from. A repeatable setting may
// have two: the file's list with the flags' added.
type Source struct {
	Origin Origin
	// Env is the variable (FromEnv).
	Env string
	// Path and Line are the file's (FromFile, or a list's file part).
	Path string
	Line int
	// Flag: flags added to the file's list (FromFile).
	Flag bool
	// FileValues is how many of a list's values the file gave (FromFile):
	// those after them are the flags'.
	FileValues int
}

// String says where the value came from as dsh-acp config shows it.
func (s Source) String() string {
	switch s.Origin {
	case FromFlag:
		return "flag"
	case FromEnv:
		return "environment"
	case FromFile:
		where := fmt.Sprintf("config file, line %d", s.Line)
		if s.Flag {
			return "flag + " + where
		}
		return where
	}
	return "default"
}

// Error is a value refused by its setting's check, naming where the value
// came from when the person did not type it: config.toml's line, or the
// environment's variable.
type Error struct {
	Setting string
	Source  Source
	Err     error
}

func (e *Error) Error() string {
	switch e.Source.Origin {
	case FromFile:
		return fmt.Sprintf("%v (set in %s:%d)", e.Err, e.Source.Path, e.Source.Line)
	case FromEnv:
		return fmt.Sprintf("%v (set in the environment: %s)", e.Err, e.Source.Env)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// HelpError carries the help text a person asked for with -h/--help.
type HelpError struct{ Text string }

func (e *HelpError) Error() string        { return "help requested" }
func (e *HelpError) Is(target error) bool { return target == flag.ErrHelp }

// Table is every setting of the program.
type Table []Setting

// Lookup is the setting name, nil when there is none.
func (t Table) Lookup(name string) *Setting {
	for i := range t {
		if t[i].Name == name {
			return &t[i]
		}
	}
	return nil
}

// For is the settings command takes, in the table's order.
func (t Table) For(command string) Table {
	var out Table
	for _, s := range t {
		if s.Command == "" || s.Command == command {
			out = append(out, s)
		}
	}
	return out
}

// FlagSet declares t's settings as the flags of a command called name,
// at their defaults. It prints nothing itself: help and errors are the
// caller's to print.
func (t Table) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range t {
		s.declare(fs)
	}
	return fs
}

// declare adds s to fs. A Var of the wrong type for its Kind is the
// table's mistake, caught by its first test.
func (s Setting) declare(fs *flag.FlagSet) {
	switch s.Kind {
	case String:
		d, _ := s.Default.(string)
		fs.StringVar(s.Var.(*string), s.Name, d, s.Usage)
	case Bool:
		d, _ := s.Default.(bool)
		fs.BoolVar(s.Var.(*bool), s.Name, d, s.Usage)
	case Int:
		d, _ := s.Default.(int)
		fs.IntVar(s.Var.(*int), s.Name, d, s.Usage)
	case Float:
		d, _ := s.Default.(float64)
		fs.Float64Var(s.Var.(*float64), s.Name, d, s.Usage)
	case Duration:
		d, _ := s.Default.(time.Duration)
		fs.DurationVar(s.Var.(*time.Duration), s.Name, d, s.Usage)
	case List:
		fs.Var((*listValue)(s.Var.(*[]string)), s.Name, s.Usage)
	}
}

// listValue is a repeatable string flag.
type listValue []string

func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}
func (l *listValue) Set(v string) error { *l = append(*l, v); return nil }

// Parsed is one command's settings after the command line.
type Parsed struct {
	// Flags is the command's flag set, holding the values.
	Flags *flag.FlagSet
	// File is config.toml as read.
	File *File
	// Args are the command line's words that are not flags.
	Args    []string
	table   Table
	sources map[string]Source
}

// Setting is the row of name among the command's, nil if none.
func (p *Parsed) Setting(name string) *Setting { return p.table.Lookup(name) }

// Source is where setting name's value came from.
func (p *Parsed) Source(name string) Source { return p.sources[name] }

// Given reports whether the command line gave setting name.
func (p *Parsed) Given(name string) bool {
	s := p.sources[name]
	return s.Origin == FromFlag || s.Flag
}

// Blame is err as setting name's: with where its value came from when
// that was not the command line.
func (p *Parsed) Blame(name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Setting: name, Source: p.sources[name], Err: err}
}

// Request is one command's reading of the settings.
type Request struct {
	// Command names the command (its flag set, and its settings: those
	// of Table.For(Command), "" for the server).
	Command string
	// Name is how errors and help name it ("dsh-acp exec").
	Name string
	// Header is the help's text above the flags.
	Header string
	// Footer is the help's text below them.
	Footer string
	Args   []string
	Getenv func(string) string
	// FilePath is config.toml's; "" for none.
	FilePath string
	// Positional checks the words that are not flags, before any value
	// is checked; nil takes any.
	Positional func([]string) error
	// NoChecks: only read the values (login, which takes every flag of
	// the server but uses one).
	NoChecks bool
}

// Parse reads t for r: the file, then the environment, then the command
// line into one flag set, then each setting's check in table order. The
// file's keys may be any command's settings; one of another command is
// ignored, one of none an error.
func (t Table) Parse(r Request) (*Parsed, error) {
	file, err := LoadFile(r.FilePath)
	if err != nil {
		return nil, err
	}
	mine := t.For(r.Command)
	p := &Parsed{Flags: mine.FlagSet(r.Name), File: file, table: mine, sources: map[string]Source{}}
	fromEnv, err := p.environment(r.Getenv)
	if err != nil {
		return nil, err
	}
	if err := p.applyFile(t, fromEnv); err != nil {
		return nil, err
	}
	if p.Args, err = ParseArgs(p.Flags, r.Header, r.Footer, r.Args); err != nil {
		return nil, err
	}
	p.Flags.Visit(func(f *flag.Flag) { p.given(f.Name) })
	if r.Positional != nil {
		if err := r.Positional(p.Args); err != nil {
			return nil, err
		}
	}
	if r.NoChecks {
		return p, nil
	}
	for _, s := range mine {
		if s.Check == nil {
			continue
		}
		if err := s.Check(); err != nil {
			name := s.Name
			var b *blamed
			if errors.As(err, &b) {
				name, err = p.culprit(b.names), b.err
			}
			var el *element
			if errors.As(err, &el) {
				if src := p.sources[name]; src.Origin == FromFile && src.Flag && el.index >= src.FileValues {
					// A value the command line added to the file's
					// list: the file is not at fault.
					return nil, &Error{Setting: name, Source: Source{Origin: FromFlag}, Err: el.err}
				}
				err = el.err
			}
			return nil, p.Blame(name, err)
		}
	}
	return p, nil
}

// given records that the command line gave name: a single value replaced
// any other; a list's flags added to the file's.
func (p *Parsed) given(name string) {
	s := p.sources[name]
	if s.Origin == FromFile && p.table.Lookup(name).Kind == List {
		s.Flag = true
		p.sources[name] = s
		return
	}
	p.sources[name] = Source{Origin: FromFlag}
}

// environment sets each setting that has a variable from it, read once;
// it returns the settings it set.
func (p *Parsed) environment(getenv func(string) string) (map[string]bool, error) {
	set := map[string]bool{}
	if getenv == nil {
		return set, nil
	}
	for _, s := range p.table {
		if s.Env == "" {
			continue
		}
		v := getenv(s.Env)
		if v == "" {
			continue
		}
		if err := p.Flags.Lookup(s.Name).Value.Set(v); err != nil {
			return nil, &Error{Setting: s.Name, Source: Source{Origin: FromEnv, Env: s.Env}, Err: fmt.Errorf("--%s %q: %s", s.Name, v, wantText(s.Kind, err))}
		}
		set[s.Name] = true
		p.sources[s.Name] = Source{Origin: FromEnv, Env: s.Env}
	}
	return set, nil
}

// applyFile sets the command's settings from the file, except those the
// environment set: flag > environment > file > default. A key of
// another command's setting (exec's yes in a server's run) is no mistake.
func (p *Parsed) applyFile(all Table, fromEnv map[string]bool) error {
	for _, e := range p.File.Entries {
		where := func(err error) error { return &FileError{Path: p.File.Path, Line: e.Line, Err: err} }
		s := all.Lookup(e.Key)
		switch {
		case s != nil && s.OneRun:
			return where(fmt.Errorf("%s is not a setting (it is one run's choice): remove it", echo(e.Key)))
		case s == nil && isKeyName(e.Key):
			return where(fmt.Errorf("%s: the API key is not a setting, so that it never sits in a file you may share: remove it, and run dsh-acp login (or set DSH_API_KEY)", echo(e.Key)))
		case s == nil:
			return where(fmt.Errorf("unknown key %s: a key is the long name of a flag of dsh-acp or dsh-acp exec (see dsh-acp help exec)", echo(e.Key)))
		case p.table.Lookup(e.Key) == nil || fromEnv[e.Key]:
			continue
		}
		if err := checkShape(s, e); err != nil {
			return where(fmt.Errorf("%s: %w", e.Key, err))
		}
		f := p.Flags.Lookup(e.Key)
		for _, v := range e.Values {
			if err := f.Value.Set(v); err != nil {
				return where(fmt.Errorf("%s: bad value %s: %s", e.Key, echo(v), wantText(s.Kind, err)))
			}
		}
		p.sources[e.Key] = Source{Origin: FromFile, Path: p.File.Path, Line: e.Line, FileValues: len(e.Values)}
	}
	return nil
}

// isKeyName: what a user may write for the API key, which is not a
// setting (dsh-acp login keeps it in a file of its own).
func isKeyName(key string) bool {
	switch strings.ToLower(key) {
	case "api-key", "api_key", "apikey":
		return true
	}
	return false
}

// wantText says what a kind takes: the flag package's own errors for
// numbers and durations are a bare "parse error".
func wantText(k Kind, err error) string {
	switch k {
	case Duration:
		return `want a duration such as "30s" or "2m"`
	case Int:
		return "want a whole number"
	case Float:
		return "want a number"
	}
	return err.Error()
}

// TOMLKind is the TOML kind a setting is written as: a number for a
// whole-number or decimal setting, true or false for a switch, a string
// for everything else (durations, URLs, names, patterns).
func (s *Setting) TOMLKind() string {
	switch s.Kind {
	case Bool:
		return "boolean"
	case Int:
		return "integer"
	case Float:
		return "float"
	}
	return "string"
}

// checkShape: arrays for repeatable settings, booleans for switches, one
// value of the setting's kind for everything else.
func checkShape(s *Setting, e Entry) error {
	switch {
	case e.List && s.Kind != List:
		return errors.New("takes one value, not an array")
	case !e.List && s.Kind == List:
		return fmt.Errorf("takes an array of strings, e.g. %s = [%s], not %s", s.Name, echo(strings.Join(e.Values, "")), article(strings.Join(e.Kinds, "")))
	case s.Kind == Bool && e.Kinds[0] != "boolean":
		return fmt.Errorf("takes true or false, got %s", echo(strings.Join(e.Values, ",")))
	case s.Kind != Bool && !e.List && e.Kinds[0] == "boolean":
		return fmt.Errorf("takes a value, not a boolean (%s)", s.Usage)
	}
	want := s.TOMLKind()
	for i, got := range e.Kinds {
		// A whole number is a number for a decimal setting too.
		if got == want || want == "float" && got == "integer" {
			continue
		}
		what := map[string]string{"integer": "a whole number", "float": "a number"}[want]
		if what == "" && s.Kind == Duration {
			what = `a duration such as "30s" or "2m"`
		}
		if what == "" {
			what = "a " + want
		}
		if e.List {
			return fmt.Errorf("element %d is %s (%s), want %s", i+1, article(got), echo(e.Values[i]), what)
		}
		return fmt.Errorf("is %s (%s), want %s", article(got), echo(e.Values[i]), what)
	}
	return nil
}

// article is kind with "a" or "an" before it.
func article(kind string) string {
	if strings.HasPrefix(kind, "i") {
		return "an " + kind
	}
	return "a " + kind
}

// culprit is the first of names set where the person cannot see it from
// the command line (config.toml or the environment), else the first.
func (p *Parsed) culprit(names []string) string {
	for _, n := range names {
		if o := p.sources[n].Origin; o == FromFile || o == FromEnv {
			return n
		}
	}
	return names[0]
}

// blamed is a check's error that is another setting's fault, or one of
// several settings'.
type blamed struct {
	names []string
	err   error
}

func (b *blamed) Error() string { return b.err.Error() }
func (b *blamed) Unwrap() error { return b.err }

// Because is err blamed on setting name, not on the setting whose check
// returned it (--timeout's check finds --max-timeout negative).
func Because(name string, err error) error {
	if err == nil {
		return nil
	}
	return &blamed{names: []string{name}, err: err}
}

// element is a check's error about one value of a list setting.
type element struct {
	index int
	err   error
}

func (e *element) Error() string { return e.err.Error() }
func (e *element) Unwrap() error { return e.err }

// Element is err about value i of a list setting: blamed on the command
// line, not config.toml, when a flag added that value to the file's list.
func Element(i int, err error) error {
	if err == nil {
		return nil
	}
	return &element{index: i, err: err}
}

// BecauseOneOf is err blamed on whichever of names came from config.toml
// or the environment (the first such), else on the first: a check that
// relates two settings (--timeout above --max-timeout) must name the
// file's line even when the value there is the other one's.
func BecauseOneOf(err error, names ...string) error {
	if err == nil || len(names) == 0 {
		return err
	}
	return &blamed{names: names, err: err}
}
