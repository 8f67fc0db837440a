package permission

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds how deep deny matching follows commands nested in strings
// (bash -c, eval, find -exec, substitutions).
const maxDepth = 16

// denier matches deny patterns against the readings of a line.
type denier struct {
	// pats are the deny patterns with their blanks normalised; rules are
	// the patterns as given, for the decision.
	pats, rules []string
	// limit is how much of a command form matching needs to see.
	limit int
	// budget is how many more characters of nested lines may be read.
	budget int
}

func newDenier(rules []string, command string) *denier {
	d := &denier{budget: 32*len(command) + 1<<16}
	for _, r := range rules {
		p := normalise(r)
		if p == "" {
			continue
		}
		d.pats = append(d.pats, p)
		d.rules = append(d.rules, r)
		d.limit = max(d.limit, len(p)+2)
	}
	return d
}

// match returns the deny rule matching one form of a command, or "".
func (d *denier) match(cmd string) string {
	for i, p := range d.pats {
		if matchNormalised(p, cmd) {
			return d.rules[i]
		}
	}
	return ""
}

// check returns the deny rule that matches any simple command of a parsed
// line in any of its readings, or "". A line nested deeper than maxDepth,
// or too large to read within the budget, cannot be shown harmless and is
// denied under the first rule. scan says whether a line the parser cannot
// read is also scanned word by word (see scan): so it is for the line and
// the strings it hands to a shell, not for here-document bodies, which are
// read as commands only in case a shell reads them (sh <<EOF) and are often
// prose.
func (d *denier) check(src string, f *syntax.File, err error, depth int, scan bool) string {
	if len(d.pats) == 0 {
		return ""
	}
	d.budget -= len(src)
	if depth > maxDepth || d.budget < 0 {
		return d.rules[0]
	}
	if rule := d.file(src, f, depth); rule != "" || err == nil {
		return rule
	}
	// Unreadable: also the line with missing tokens filled in, then (if
	// scan) every word.
	if g, gerr := parseRecovering(src); gerr == nil {
		if rule := d.file(src, g, depth); rule != "" {
			return rule
		}
	}
	if scan {
		return d.scan(src)
	}
	return ""
}

// line parses a nested line and checks it.
func (d *denier) line(src string, depth int, scan bool) string {
	if len(d.pats) == 0 {
		return ""
	}
	f, err := parse(src)
	return d.check(src, f, err, depth, scan)
}

// file checks every command of a parsed line, wherever it stands: in
// lists, pipelines, compound commands, function bodies, substitutions,
// arithmetic, parameter expansions and here-document bodies.
func (d *denier) file(src string, f *syntax.File, depth int) string {
	rule := ""
	if f == nil {
		return rule
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			words := make([]word, 0, len(n.Assigns)+len(n.Args))
			for _, a := range n.Assigns {
				raw := slice(src, a)
				words = append(words, word{raw: raw, text: raw})
			}
			for _, w := range n.Args {
				words = append(words, newWord(src, w))
			}
			rule = d.words(src, words, depth)
		case *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause:
			// Builtins the parser reads as syntax (export, let, [[).
			rule = d.match(normalise(slice(src, n)))
		case *syntax.Redirect:
			if n.Hdoc != nil && (n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc) {
				rule = d.line(heredocBody(src, n.Hdoc), depth+1, false)
			}
		}
		return rule == ""
	})
	return rule
}

// words matches the readings of one simple command (its assignments first,
// then its program and arguments).
func (d *denier) words(src string, words []word, depth int) string {
	if rule := d.match(d.join(words, false)); rule != "" {
		return rule
	}
	// Peel assignments and wrappers one at a time; every step is a reading
	// of what runs.
	for len(words) > 0 {
		for len(words) > 0 && isAssignment(words[0].raw) {
			words = words[1:]
		}
		if len(words) == 0 {
			break
		}
		if exp, ok := braces(src, words[0], maxBraceWords); ok {
			words = append(exp, words[1:]...)
		}
		prog := words[0].text
		base := path.Base(prog)
		if prog == "" {
			base = ""
		}
		args := words[1:]
		rawArgs, textArgs := d.join(args, false), d.join(args, true)
		for _, p := range []string{words[0].raw, prog, base} {
			for _, a := range []string{rawArgs, textArgs} {
				if rule := d.match(strings.TrimSpace(p + " " + a)); rule != "" {
					return rule
				}
			}
		}
		for _, inner := range nested(base, args) {
			if rule := d.line(inner, depth+1, true); rule != "" {
				return rule
			}
		}
		spec, ok := wrappers[base]
		if !ok {
			break
		}
		words = spec.strip(args)
	}
	return ""
}

// maxBraceWords bounds the words a brace expansion of a program yields:
// {1..100}{1..100} need not be read to its end, patterns look at the start.
const maxBraceWords = 64

// scan matches the patterns at every word of a line the parser cannot
// read, with quotes and backslashes removed and the base name of each
// word tried too: it reads `rm -rf /; (` and `echo $(rm -f V` as a shell
// might, and more (it also denies `echo rm` in such a line).
func (d *denier) scan(src string) string {
	src = strings.ReplaceAll(src, "\\\n", "")
	fields := strings.FieldsFunc(src, func(r rune) bool {
		return isBlank(r) || strings.ContainsRune(";&|()<>`{},$", r)
	})
	strip := strings.NewReplacer(`"`, "", `'`, "", `\`, "")
	words := make([]word, len(fields))
	for i, f := range fields {
		t := strip.Replace(f)
		words[i] = word{raw: t, text: t}
	}
	for i, w := range words {
		if w.text == "" {
			continue
		}
		rest := d.join(words[i+1:], true)
		for _, p := range []string{w.text, path.Base(w.text)} {
			if rule := d.match(strings.TrimSpace(p + " " + rest)); rule != "" {
				return rule
			}
		}
	}
	return ""
}

// join joins the words (raw or unquoted) with spaces, stopping once the
// result is longer than any pattern can look.
func (d *denier) join(ws []word, text bool) string {
	var b strings.Builder
	for i, w := range ws {
		if b.Len() > d.limit {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if text {
			b.WriteString(w.text)
		} else {
			b.WriteString(w.raw)
		}
	}
	return b.String()
}

// shells run their -c argument as a command line.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"ash": true, "yash": true, "fish": true, "csh": true, "tcsh": true, "rbash": true,
}

// nested returns the command lines a program runs from its arguments:
// `bash -c STRING`, `eval ARGS…`, `su -c STRING`, `env -S STRING`,
// `find … -exec CMD… ;`, `watch ARGS…`, `trap HANDLER SIGNAL…`.
func nested(prog string, args []word) []string {
	if shells[prog] {
		if s, ok := shellString(args); ok {
			return []string{s}
		}
		return nil
	}
	if f := runners[prog]; f != nil {
		return f(args)
	}
	return nil
}

// runners find the command lines in the arguments of programs that run
// them.
var runners = map[string]func([]word) []string{
	"eval":    evalLine,
	"watch":   watchLine,
	"su":      suLine,
	"runuser": suLine,
	"env":     envLine,
	"find":    findLines,
	"trap":    trapLine,
}

func evalLine(args []word) []string {
	if len(args) == 0 {
		return nil
	}
	return []string{joinText(args)}
}

func watchLine(args []word) []string {
	return evalLine(wrapperSpec{argOpts: "nq", longArgs: []string{"interval", "equexit"}}.strip(args))
}

func suLine(args []word) []string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a.text, "--command="); ok {
			return []string{v}
		}
		if i+1 < len(args) && (a.text == "--command" || isShortCluster(a.text) && strings.Contains(a.text, "c")) {
			return []string{args[i+1].text}
		}
	}
	return nil
}

func envLine(args []word) []string {
	for i := 0; i < len(args) && strings.HasPrefix(args[i].text, "-"); i++ {
		a := args[i].text
		if v, ok := strings.CutPrefix(a, "--split-string="); ok {
			return []string{v}
		}
		switch {
		case (a == "-S" || a == "--split-string") && i+1 < len(args):
			return []string{args[i+1].text}
		case strings.HasPrefix(a, "-S"):
			return []string{a[2:]}
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			i++ // their argument
		}
	}
	return nil
}

// trapLine is the handler of `trap [--] HANDLER SIGNAL…`, run later.
func trapLine(args []word) []string {
	if len(args) > 0 && args[0].text == "--" {
		args = args[1:]
	}
	if len(args) < 2 || args[0].text == "-" {
		return nil
	}
	return []string{args[0].text}
}

func findLines(args []word) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			out = append(out, joinRaw(args[i+1:j]))
			i = j
		}
	}
	return out
}

func isShortCluster(a string) bool {
	return len(a) >= 2 && a[0] == '-' && a[1] != '-'
}

// shellString finds the command string of `sh [options] -c STRING`
// (also -lc, -ec, -o pipefail -c …).
func shellString(args []word) (string, bool) {
	c := false
	for i := 0; i < len(args); i++ {
		a := args[i].text
		switch {
		case a == "--" || a == "-":
			if c && i+1 < len(args) {
				return args[i+1].text, true
			}
			return "", false
		case len(a) < 2 || a[0] != '-' && a[0] != '+':
			return a, c
		case strings.HasPrefix(a, "--"):
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
		default:
			hasC, takesArg := shellFlags(a)
			c = c || hasC
			if takesArg {
				i++
			}
		}
	}
	return "", false
}

// shellFlags reads a cluster of a shell's short options (-ec, +o): c when
// it holds -c, takesArg when the next word is its argument (-o/-O NAME).
func shellFlags(a string) (c, takesArg bool) {
	for _, f := range a[1:] {
		switch f {
		case 'c':
			c = true
		case 'o', 'O':
			takesArg = true
		}
	}
	return c, takesArg
}

// wrapperSpec describes a program that runs another program given after its
// options (and operands).
type wrapperSpec struct {
	// argOpts are the short options that take an argument.
	argOpts string
	// longArgs are the long options that take an argument when it is not
	// attached with "=".
	longArgs []string
	// operands come between the options and the command (timeout's DURATION).
	operands int
}

// strip returns the arguments after the wrapper's options and operands:
// the command it runs.
func (w wrapperSpec) strip(args []word) []word {
	i := 0
	for i < len(args) {
		a := args[i].text
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		i++
		if long, ok := strings.CutPrefix(a, "--"); ok {
			if !strings.Contains(long, "=") && slices.Contains(w.longArgs, long) {
				i++
			}
			continue
		}
		for k := 1; k < len(a); k++ {
			if strings.IndexByte(w.argOpts, a[k]) >= 0 {
				if k == len(a)-1 {
					i++ // the argument is the next word
				}
				break
			}
		}
	}
	args = args[min(i, len(args)):]
	return args[min(w.operands, len(args)):]
}

// wrappers are the programs deny matching looks through.
var wrappers = map[string]wrapperSpec{
	"command":  {},
	"builtin":  {},
	"exec":     {argOpts: "a"},
	"nohup":    {},
	"setsid":   {},
	"unbuffer": {},
	"busybox":  {},
	"fakeroot": {},
	"doas":     {argOpts: "uC"},
	"env":      {argOpts: "uCS", longArgs: []string{"unset", "chdir", "split-string"}},
	"nice":     {argOpts: "n", longArgs: []string{"adjustment"}},
	"time":     {argOpts: "fo", longArgs: []string{"format", "output"}},
	"timeout":  {argOpts: "sk", longArgs: []string{"signal", "kill-after"}, operands: 1},
	"sudo": {argOpts: "CDghprRtTUu", longArgs: []string{
		"close-from", "chdir", "group", "host", "prompt", "role", "chroot", "type",
		"command-timeout", "other-user", "user",
	}},
	"xargs": {argOpts: "adEILnPs", longArgs: []string{
		"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var",
	}},
	"stdbuf":  {argOpts: "ioe", longArgs: []string{"input", "output", "error"}},
	"ionice":  {argOpts: "cnpPu", longArgs: []string{"class", "classdata", "pid", "pgid", "uid"}},
	"chrt":    {argOpts: "TPD", longArgs: []string{"sched-runtime", "sched-period", "sched-deadline"}, operands: 1},
	"taskset": {operands: 1},
	"chroot":  {longArgs: []string{"userspec", "groups"}, operands: 1},
}
