package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// CommandUsage is dsh-acp config's help, above its flags.
const CommandUsage = `Usage:
  dsh-acp config [flags]

Prints every setting's effective value and where it came from: a flag,
the environment, the config file (with its line) or the default. Flags
given here count as they would for dsh-acp exec. The API key's value is
never printed, only where it was found.

Every flag of dsh-acp and dsh-acp exec can be set in config.toml under
its long name (model = "deepseek-flash", allow = ["git status"], …), except
version, resume, continue and cwd. Precedence: flag > environment > config
file > default; repeatable flags (allow, deny, …) add to the file's list.

Flags:
`

// ParseArgs parses args into fs with flags allowed anywhere: a flag after
// the prompt is a flag, never prompt text. "--" ends the flags. Help is a
// HelpError of the header, the flags and the footer; a flag error is
// worded as a sentence naming the flag and the fix.
func ParseArgs(fs *flag.FlagSet, header, footer string, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &HelpError{Text: Usage(header, fs) + footer}
			}
			return nil, flagSentence(fs, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// Usage is a flag set's help: the header, then every flag.
func Usage(header string, fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(header)
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	// The README and every example spell flags with two dashes.
	b.WriteString(strings.ReplaceAll("\n"+flags.String(), "\n  -", "\n  --")[1:])
	return b.String()
}

// UsageOnly is a command's help listing only the flags names of fs.
func UsageOnly(header string, fs *flag.FlagSet, names ...string) string {
	only := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			only.Var(f.Value, f.Name, f.Usage)
		}
	}
	return Usage(header, only)
}

// Settle ends a command where its flags decide it: help (to stdout, exit
// 0) or a bad flag (to stderr, with where to read the usage, exit 2).
// done is false when err is nil.
func Settle(err error, name string, stdout, stderr io.Writer) (code int, done bool) {
	var help *HelpError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return 2, true
	}
	return 0, false
}

// Describe says which config.toml was read, as dsh-acp config shows it.
func (f *File) Describe(w io.Writer) {
	switch {
	case f.Path == "":
		fmt.Fprintln(w, "config file: none (no HOME or XDG_CONFIG_HOME to find it by)")
	case f.Found:
		fmt.Fprintf(w, "config file: %s\n", f.Path)
	default:
		fmt.Fprintf(w, "config file: %s (not there; every setting below is a flag, the environment or a default)\n", f.Path)
	}
}

// Print writes a table of every setting but one run's choices, in name
// order: its value (defaults' words for an empty or zero one, what a run
// would use) and where it came from.
func (p *Parsed) Print(w io.Writer, defaults map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	p.Flags.VisitAll(func(f *flag.Flag) {
		if p.Setting(f.Name).OneRun {
			return
		}
		v := shown(f)
		if d, ok := defaults[f.Name]; ok && (f.Value.String() == "" || f.Value.String() == "0") {
			v = d
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, v, p.Source(f.Name))
	})
	tw.Flush()
}

// shown is a value as a person reads it.
func shown(f *flag.Flag) string {
	v := f.Value.String()
	if v == "" {
		return `""`
	}
	if strings.ContainsAny(v, " \t") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
