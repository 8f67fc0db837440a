package config

import (
	"flag"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// flagForms are the four forms of the flag package's errors, worded for
// programmers ("invalid value "3" for flag -model-timeout: parse error");
// compiled when an error is to be reworded, not at every start.
var flagForms = sync.OnceValue(func() [4]*regexp.Regexp {
	return [4]*regexp.Regexp{
		regexp.MustCompile(`^flag provided but not defined: -+(.*)$`),
		regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`),
		regexp.MustCompile(`^flag needs an argument: -+(.*)$`),
		regexp.MustCompile(`^bad flag syntax: (.*)$`),
	}
})

// flagSentence rewords a flag package error as a sentence that names the
// flag, the value and the fix, in the two-dash spelling the README uses;
// any other error is returned as it is.
func flagSentence(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	forms := flagForms()
	flagUnknown, flagInvalid, flagNoValue, flagBadSyntx := forms[0], forms[1], forms[2], forms[3]
	if m := flagUnknown.FindStringSubmatch(msg); m != nil {
		name := m[1]
		if near := nearestFlag(fs, name); near != "" {
			return fmt.Errorf("there is no flag --%s; did you mean --%s?", name, near)
		}
		return fmt.Errorf("there is no flag --%s", name)
	}
	if m := flagInvalid.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		want := wantValue(fs.Lookup(name))
		if strings.HasSuffix(value, "d") && strings.HasPrefix(want, "a duration") {
			want += "; Go has no d: 72h is 3 days"
		}
		return fmt.Errorf("--%s %q: %s", name, value, want)
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		name := m[1]
		arg := " VALUE"
		if f := fs.Lookup(name); f != nil && strings.Contains(f.Usage, "`") {
			a, _ := flag.UnquoteUsage(f)
			arg = " " + a
		}
		return fmt.Errorf("--%s needs a value: --%s%s", name, name, arg)
	}
	if m := flagBadSyntx.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%q is not a flag: flags are --NAME or --NAME=VALUE (put prompt text after --)", m[1])
	}
	return err
}

// wantValue says what kind of value flag f takes.
func wantValue(f *flag.Flag) string {
	if f == nil {
		return "not a valid value"
	}
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue":
		return "a duration needs a unit: 90s, 2m, 1h30m (Go's form)"
	case "*flag.intValue":
		return "want a whole number, e.g. " + f.DefValue
	case "*flag.float64Value":
		return "want a number, e.g. " + f.DefValue
	case "*flag.boolValue":
		return "this flag is on when given; --" + f.Name + "=false turns it off (true or false)"
	}
	return "not a valid value"
}

// nearestFlag is the flag of fs whose name is closest to name (a typo, a
// missing or extra letter, or a prefix), "" when none is near.
func nearestFlag(fs *flag.FlagSet, name string) string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	fs.VisitAll(func(f *flag.Flag) {
		d := distance(name, f.Name)
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = 1
		}
		if d <= 2 {
			cs = append(cs, cand{f.Name, d})
		}
	})
	if len(cs) == 0 {
		return ""
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || cs[i].d == cs[j].d && cs[i].name < cs[j].name })
	return cs[0].name
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
