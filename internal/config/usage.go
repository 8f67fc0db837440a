package config

import (
	"errors"
	"flag"
	"io"
	"strings"
)

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
