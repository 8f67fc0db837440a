package permission

import (
	"strconv"
	"strings"
)

// This file reads one simple command (a part of Split) the way the shell
// would, closely enough for the checks: words with and without their quotes,
// and redirections apart from the words.

// word is one shell word.
type word struct {
	// raw is the word as written.
	raw string
	// text is the word after quote removal: quotes and backslashes gone,
	// $'…' escapes decoded; expansions ($x, $(…), `…`) are kept as written.
	text string
	// quoted: the word has quotes or backslashes somewhere.
	quoted bool
}

// redirect is one redirection: its operator (>, >>, >|, &>, &>>, >&, <, <<,
// <<-, <<<, <>, <&), the file descriptor written before it if any, and its
// target word.
type redirect struct {
	op     string
	target word
}

// simple is a parsed simple command.
type simple struct {
	words  []word
	redirs []redirect
}

func isBlank(c rune) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseSimple splits one simple command into words and redirections. Unquoted
// ( and ) are words of their own, as they are shell metacharacters.
func parseSimple(s string) simple {
	rs := []rune(s)
	var out simple
	i := 0
	for {
		for i < len(rs) && isBlank(rs[i]) {
			i++
		}
		if i >= len(rs) {
			return out
		}
		if op, n := redirOp(rs, i); n > 0 {
			i = out.addRedirect(rs, i+n, op)
			continue
		}
		if rs[i] == '(' || rs[i] == ')' {
			out.words = append(out.words, word{raw: string(rs[i]), text: string(rs[i])})
			i++
			continue
		}
		w, j := lexWord(rs, i)
		if j == i { // a character lexWord stops at without consuming it
			w, j = word{raw: string(rs[i]), text: string(rs[i])}, i+1
		}
		i = j
		// "2>file", "{fd}>file": the word is the descriptor of a redirection.
		if op, n := redirOp(rs, i); n > 0 && isFD(w) {
			i = out.addRedirect(rs, i+n, w.raw+op)
			continue
		}
		out.words = append(out.words, w)
	}
}

func (s *simple) addRedirect(rs []rune, i int, op string) int {
	for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t') {
		i++
	}
	target, j := lexWord(rs, i)
	s.redirs = append(s.redirs, redirect{op: op, target: target})
	return j
}

// isFD reports whether a word written right before a redirection operator is
// its file descriptor: digits, or {name}.
func isFD(w word) bool {
	if w.quoted || w.raw == "" {
		return false
	}
	if strings.HasPrefix(w.raw, "{") && strings.HasSuffix(w.raw, "}") && len(w.raw) > 2 {
		return isName(w.raw[1 : len(w.raw)-1])
	}
	return strings.Trim(w.raw, "0123456789") == ""
}

// redirOp returns the redirection operator at rs[i] and its length, or 0.
// <( and >( are process substitutions, not redirections.
func redirOp(rs []rune, i int) (string, int) {
	if i >= len(rs) {
		return "", 0
	}
	rest := string(rs[i:min(i+3, len(rs))])
	for _, op := range []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&"} {
		if strings.HasPrefix(rest, op) {
			return op, len(op)
		}
	}
	if (rs[i] == '<' || rs[i] == '>') && (i+1 >= len(rs) || rs[i+1] != '(') {
		return string(rs[i]), 1
	}
	return "", 0
}

// lexWord reads one word starting at rs[i] and returns it and the index
// after it. It stops at blanks, unquoted ( ), redirection operators and the
// end.
func lexWord(rs []rune, i int) (word, int) {
	start := i
	var text []rune
	quoted := false
	for i < len(rs) {
		c := rs[i]
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		switch {
		case isBlank(c), c == '(', c == ')':
			return word{raw: string(rs[start:i]), text: string(text), quoted: quoted}, i
		case (c == '<' || c == '>') && next == '(': // process substitution
			j := skipParens(rs, i+1)
			text = append(text, rs[i:j]...)
			i = j
		case c == '<', c == '>', c == '&' && next == '>':
			return word{raw: string(rs[start:i]), text: string(text), quoted: quoted}, i
		case c == '\\':
			quoted = true
			if next != 0 && next != '\n' {
				text = append(text, next)
			}
			i = min(i+2, len(rs))
		case c == '\'':
			quoted = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			text = append(text, rs[i+1:j]...)
			i = min(j+1, len(rs))
		case c == '$' && next == '\'':
			quoted = true
			var j int
			text, j = ansiC(rs, i+2, text)
			i = j
		case c == '$' && next == '"': // locale quoting reads like "…"
			i++
		case c == '"':
			quoted = true
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				switch {
				case rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\\$`\"\n", rs[j+1]):
					if rs[j+1] != '\n' {
						text = append(text, rs[j+1])
					}
					j += 2
				case rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '(':
					k := skipParens(rs, j+1)
					text = append(text, rs[j:k]...)
					j = k
				case rs[j] == '`':
					k := skipBackticks(rs, j)
					text = append(text, rs[j:k]...)
					j = k
				default:
					text = append(text, rs[j])
					j++
				}
			}
			i = min(j+1, len(rs))
		case c == '$' && next == '(':
			j := skipParens(rs, i+1)
			text = append(text, rs[i:j]...)
			i = j
		case c == '$' && next == '{':
			j := skipBraces(rs, i+1)
			text = append(text, rs[i:j]...)
			i = j
		case c == '`':
			j := skipBackticks(rs, i)
			text = append(text, rs[i:j]...)
			i = j
		default:
			text = append(text, c)
			i++
		}
	}
	return word{raw: string(rs[start:i]), text: string(text), quoted: quoted}, i
}

// ansiC decodes the body of $'…' starting at rs[i] onto text and returns the
// index after the closing quote.
func ansiC(rs []rune, i int, text []rune) ([]rune, int) {
	for i < len(rs) && rs[i] != '\'' {
		if rs[i] != '\\' || i+1 >= len(rs) {
			text = append(text, rs[i])
			i++
			continue
		}
		// Let Go decode \n, \t, \xHH, \NNN, \uXXXX…; anything else is the
		// character itself.
		esc := string(rs[i:min(i+10, len(rs))])
		if v, _, tail, err := strconv.UnquoteChar(esc, '\''); err == nil {
			text = append(text, v)
			i += len([]rune(esc)) - len([]rune(tail))
			continue
		}
		text = append(text, rs[i+1])
		i += 2
	}
	return text, min(i+1, len(rs))
}

// skipParens returns the index after the ")" that closes the "(" at rs[i]
// (or len(rs)), skipping quoted text.
func skipParens(rs []rune, i int) int { return skipNested(rs, i, '(', ')') }

// skipBraces is skipParens for ${…}.
func skipBraces(rs []rune, i int) int { return skipNested(rs, i, '{', '}') }

func skipNested(rs []rune, i int, open, close rune) int {
	depth := 0
	var quote rune
	for ; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\\' && quote != '\'':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(rs)
}

// skipBackticks returns the index after the backtick closing the one at
// rs[i] (or len(rs)).
func skipBackticks(rs []rune, i int) int {
	for i++; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			i++
		case '`':
			return i + 1
		}
	}
	return len(rs)
}

// substitutions returns the bodies of the command substitutions ($(…),
// `…`) and process substitutions (<(…), >(…)) in a line, outermost first.
func substitutions(command string) []string {
	rs := []rune(command)
	var out []string
	single, double := false, false
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case single:
			if c == '\'' {
				single = false
			}
		case c == '\\':
			i++
		case c == '\'' && !double:
			single = true
		case c == '"':
			double = !double
		case c == '`':
			j := skipBackticks(rs, i)
			end := j
			if end > i+1 && rs[end-1] == '`' {
				end--
			}
			out = append(out, string(rs[i+1:end]))
			i = j - 1
		case (c == '$' || !double && (c == '<' || c == '>')) && i+1 < len(rs) && rs[i+1] == '(':
			j := skipParens(rs, i+1)
			end := j
			if end > i+2 && rs[end-1] == ')' {
				end--
			}
			out = append(out, string(rs[i+2:end]))
			i = j - 1
		}
	}
	return out
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
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

// reserved are the words the shell reads as syntax, not as a program, at
// the start of a simple command.
var reserved = map[string]bool{
	"!": true, "{": true, "}": true, "(": true, ")": true, "if": true, "then": true,
	"else": true, "elif": true, "fi": true, "do": true, "done": true, "while": true,
	"until": true, "esac": true, "coproc": true,
}

// stripKeywords drops the shell syntax in front of the command of a part:
// reserved words, `time [-p]`, function heads (`f() {`, `function f {`) and
// `case WORD in`. A `for`/`select` head runs nothing and yields no words.
// casePatterns also drops a leading `PATTERN )`, which is ambiguous (it
// could close a subshell), so only deny matching, which tries every
// reading, uses it. Trailing ) and } words are dropped too.
func stripKeywords(words []word, casePatterns bool) []word {
	for len(words) > 0 {
		w := words[0]
		if w.quoted {
			break
		}
		if reserved[w.raw] {
			words = words[1:]
			continue
		}
		switch w.raw {
		case "time":
			words = words[1:]
			if len(words) > 0 && words[0].raw == "-p" {
				words = words[1:]
			}
			continue
		case "for", "select":
			if len(words) >= 3 && words[2].raw == "do" {
				words = words[3:]
				continue
			}
			return nil
		case "case":
			if len(words) >= 3 && words[2].raw == "in" {
				words = words[3:]
				continue
			}
			return nil
		case "function":
			words = words[min(2, len(words)):]
			if len(words) >= 2 && words[0].raw == "(" && words[1].raw == ")" {
				words = words[2:]
			}
			continue
		}
		if len(words) >= 3 && words[1].raw == "(" && words[2].raw == ")" {
			words = words[3:]
			continue
		}
		if casePatterns && len(words) >= 2 && words[1].raw == ")" {
			words = words[2:]
			continue
		}
		break
	}
	for len(words) > 0 {
		last := words[len(words)-1]
		if last.quoted || last.raw != ")" && last.raw != "}" {
			break
		}
		words = words[:len(words)-1]
	}
	return words
}

// writes reports whether the command writes a file through a redirection.
// Duplicating or closing descriptors (2>&1, >&2, >&-) and /dev/null,
// /dev/stdout and /dev/stderr as targets do not count.
func (s simple) writes() bool {
	for _, r := range s.redirs {
		op := strings.TrimLeft(r.op, "0123456789")
		if strings.HasPrefix(op, "{") {
			op = op[strings.IndexByte(op, '}')+1:]
		}
		switch op {
		case ">&":
			t := strings.TrimSuffix(r.target.text, "-")
			if r.target.text == "-" || t != "" && strings.Trim(t, "0123456789") == "" {
				continue // a descriptor: 2>&1, >&2, >&-
			}
		case ">", ">>", ">|", "&>", "&>>", "<>":
		default:
			continue // input: <, <<, <<<, <&
		}
		switch r.target.text {
		case "/dev/null", "/dev/stdout", "/dev/stderr":
			continue
		}
		return true
	}
	return false
}

func joinRaw(ws []word) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.raw
	}
	return strings.Join(s, " ")
}

func joinText(ws []word) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.text
	}
	return strings.Join(s, " ")
}
