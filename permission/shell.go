package permission

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// This file reads a line with a real shell parser (mvdan.cc/sh, bash
// dialect) and turns what it finds into the few facts the checks need:
// the simple commands with their words, and whether the line holds anything
// an allow rule can never pass.

// parse reads a line as bash. On error the file holds the statements read
// before it.
func parse(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// parseRecovering reads a line the way parse does, but fills in up to a few
// missing tokens (a closing quote or parenthesis, a missing `done`), as an
// editor completing a prompt would. Only deny matching and Programs, which read
// fragments, use it: what it returns is not what a shell would run.
func parseRecovering(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.RecoverErrors(8)).Parse(strings.NewReader(src), "")
}

// word is one shell word.
type word struct {
	// raw is the word as written.
	raw string
	// text is the word after quote removal: quotes and backslashes gone,
	// $'…' escapes decoded; expansions ($x, $(…), `…`) are kept as written.
	text string
	// node is the parsed word, for brace expansion; nil for words that
	// brace expansion produced.
	node *syntax.Word
}

func newWord(src string, w *syntax.Word) word {
	return word{raw: slice(src, w), text: unquote(src, w.Parts, false), node: w}
}

// slice returns the source of a node, or "" when its positions do not lie
// in src (nodes of another source).
func slice(src string, n syntax.Node) string {
	start, end, ok := span(n)
	if !ok || end > len(src) {
		return ""
	}
	return src[start:end]
}

// span returns the byte offsets of a node. ok is false for a node without
// valid positions: one the parser filled in while recovering from an error
// (its Pos and End may even fail: a recovered word can have no parts).
func span(n syntax.Node) (start, end int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, e := n.Pos(), n.End()
	if !p.IsValid() || !e.IsValid() || p.IsRecovered() || e.IsRecovered() || p.Offset() > e.Offset() {
		return 0, 0, false
	}
	return int(p.Offset()), int(e.Offset()), true
}

// unquote removes the quotes of word parts (inside double quotes if dq).
func unquote(src string, parts []syntax.WordPart, dq bool) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, dq))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted: // "…" and $"…" (locale quoting) read alike
			b.WriteString(unquote(src, p.Parts, true))
		default:
			b.WriteString(slice(src, p))
		}
	}
	return b.String()
}

// unescape removes the backslashes the shell removes from a literal:
// every one outside quotes, those before $ ` " \ inside double quotes.
// (The parser has already dropped backslash-newlines.)
func unescape(s string, dq bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!dq || strings.IndexByte("$`\"\\", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes the body of $'…' as bash does: printf's escapes, cut at a
// NUL. expand.Format is printf, so a literal % is doubled first. Each call
// gets its own Config: a nil one stands for a package-level value that
// expand writes to, a data race between concurrent checks.
func ansiC(s string) string {
	v, _, err := expand.Format(&expand.Config{}, strings.ReplaceAll(s, "%", "%%"), nil)
	if err != nil {
		return s
	}
	v, _, _ = strings.Cut(v, "\x00")
	return v
}

// command is one simple command of a line.
type command struct {
	// assigns are the leading VAR=value words, as written.
	assigns []string
	// words are the program and its arguments.
	words []word
}

// canonical is the command as allow rules see it: its words as written,
// one space apart.
func (c command) canonical() string {
	return strings.Join(append(append([]string(nil), c.assigns...), rawWords(c.words)...), " ")
}

func rawWords(ws []word) []string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.raw
	}
	return s
}

// reading is what the allow side knows of a parsed line.
type reading struct {
	// commands are the simple commands outside substitutions, in order.
	commands []command
	// unsafe names what no allow rule or remembered key may pass, or "".
	unsafe string
}

// hasSubstitution reports whether text spells a command or process
// substitution anywhere, quoted or not: quoted text still reaches
// evaluators (printf -v 'a[$(id)]' x, test -v, unset and read evaluate
// array subscripts, which run substitutions).
func hasSubstitution(text string) bool {
	return strings.Contains(text, "$(") || strings.Contains(text, "`") ||
		strings.Contains(text, "<(") || strings.Contains(text, ">(")
}

// read collects the simple commands of a parsed line and notes anything an
// allow rule must not pass: substitutions, even quoted ones (see
// hasSubstitution; what they run is not the line as written), file writes, here-documents (a body the rule never saw),
// function definitions and coproc (they change what a later name runs),
// case arms, declarations (export X=… is an assignment) and arithmetic
// (bash evaluates array subscripts in it, which can run commands).
func read(src string, f *syntax.File) reading {
	var r reading
	note := func(why string) {
		if r.unsafe == "" {
			r.unsafe = why
		}
	}
	if hasSubstitution(src) {
		note("substitution")
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			r.commands = append(r.commands, newCommand(src, c))
			return true
		}
		why, descend := nodeRisk(src, n)
		if why != "" {
			note(why)
		}
		return descend
	})
	return r
}

// newCommand is a simple command as read.
func newCommand(src string, n *syntax.CallExpr) command {
	c := command{}
	for _, a := range n.Assigns {
		c.assigns = append(c.assigns, slice(src, a))
	}
	for _, w := range n.Args {
		c.words = append(c.words, newWord(src, w))
	}
	return c
}

// nodeRisk says why a node keeps allow rules from passing its line (""
// when it does not); descend is false for a substitution, whose insides
// the rules never see anyway.
func nodeRisk(src string, n syntax.Node) (why string, descend bool) {
	switch n := n.(type) {
	case *syntax.Stmt:
		if n.Coprocess || n.Disown {
			return "coprocess", true
		}
	case *syntax.Redirect:
		return redirectRisk(src, n), true
	case *syntax.CmdSubst, *syntax.ProcSubst:
		return "substitution", false
	case *syntax.SglQuoted:
		if n.Dollar && hasSubstitution(ansiC(n.Value)) {
			return "substitution", true // $'\x24(id)' spells one
		}
	case *syntax.ParamExp:
		if n.Index != nil || n.Slice != nil {
			return "arithmetic", true
		}
	default:
		return kindRisk(n), true
	}
	return "", true
}

// kindRisk says why a node of a risky kind keeps allow rules from passing
// its line, whatever it holds.
func kindRisk(n syntax.Node) string {
	switch n.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop, *syntax.TestClause:
		return "arithmetic"
	case *syntax.FuncDecl:
		return "function"
	case *syntax.CoprocClause:
		return "coprocess"
	case *syntax.CaseClause:
		return "case"
	case *syntax.DeclClause:
		return "declaration"
	}
	return ""
}

// redirectRisk says why a redirection keeps allow rules from passing its
// command: it writes a file, or it is a here-document. Duplicating or
// closing descriptors (2>&1, >&2, >&-) and /dev/null, /dev/stdout and
// /dev/stderr as targets are fine, and so is input (<, <<<, <&).
func redirectRisk(src string, r *syntax.Redirect) string {
	target := ""
	if r.Word != nil {
		target = unquote(src, r.Word.Parts, false)
	}
	switch r.Op {
	case syntax.RdrIn, syntax.DplIn, syntax.WordHdoc:
		return ""
	case syntax.Hdoc, syntax.DashHdoc:
		return "here-document"
	case syntax.DplOut:
		t := strings.TrimSuffix(target, "-")
		if target == "-" || t != "" && strings.Trim(t, "0123456789") == "" {
			return "" // a descriptor: 2>&1, >&2, >&-
		}
	}
	switch target {
	case "/dev/null", "/dev/stdout", "/dev/stderr":
		return ""
	}
	return "file write"
}

// heredocBody is the text of a here-document as a shell reading it as a
// script (sh <<EOF) would see it.
func heredocBody(src string, w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteString(slice(src, p))
		}
	}
	return b.String()
}

// braces expands a word's brace expansion ({rm,-f,V}, r{m,}), at most max
// words; ok is false when it has none.
func braces(src string, w word, max int) ([]word, bool) {
	if w.node == nil {
		return nil, false
	}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.node.Parts...)}
	if !syntax.SplitBraces(cp) {
		return nil, false
	}
	var out []word
	for e, err := range expand.BracesSeq(&expand.Config{}, cp) {
		if err != nil || len(out) >= max {
			break
		}
		if t := unquote(src, e.Parts, false); t != "" {
			out = append(out, word{raw: t, text: t})
		}
	}
	return out, len(out) > 0
}

func isBlank(c rune) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	return syntax.ValidName(s)
}

// isAssignment reports whether a word is NAME=value, NAME+=value or
// NAME[i]=value.
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	name := strings.TrimSuffix(w[:i], "+")
	if j := strings.IndexByte(name, '['); j > 0 && strings.HasSuffix(name, "]") {
		name = name[:j]
	}
	return isName(name)
}

func joinRaw(ws []word) string { return strings.Join(rawWords(ws), " ") }

func joinText(ws []word) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.text
	}
	return strings.Join(s, " ")
}
