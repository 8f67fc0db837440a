package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

const completionUsage = `Usage:
  dsh-acp completion bash|zsh|fish

Prints a completion script. For example:
  bash:  source <(dsh-acp completion bash)
  zsh:   dsh-acp completion zsh > "${fpath[1]}/_dsh-acp"
  fish:  dsh-acp completion fish > ~/.config/fish/completions/dsh-acp.fish
`

func runCompletion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer, _ env) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, completionUsage)
		return 0
	}
	if len(args) != 1 {
		fmt.Fprint(stderr, "dsh-acp completion: name one shell\n"+completionUsage)
		return 2
	}
	words := completionWords()
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion(words))
	case "zsh":
		fmt.Fprint(stdout, zshCompletion(words))
	case "fish":
		fmt.Fprint(stdout, fishCompletion(words))
	default:
		fmt.Fprintf(stderr, "dsh-acp completion: no script for %q (bash, zsh or fish)\n", args[0])
		return 2
	}
	return 0
}

// words are what the scripts complete: subcommands, and flags (with "--").
type words struct {
	commands []command
	flags    []*flag.Flag
}

func completionWords() words {
	var w words
	w.commands = commandTable()
	execFlags(&config{}, noEnvAt).VisitAll(func(f *flag.Flag) { w.flags = append(w.flags, f) })
	return w
}

func (w words) flagNames() string {
	var names []string
	for _, f := range w.flags {
		names = append(names, "--"+f.Name)
	}
	return strings.Join(names, " ")
}

func bashCompletion(w words) string {
	return fmt.Sprintf(`# bash completion for dsh-acp
_dsh_acp() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  case ${COMP_WORDS[1]} in
    completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
    help) COMPREPLY=($(compgen -W %q -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _dsh_acp dsh-acp
`, strings.Join(commandNames(), " "), strings.Join(commandNames(), " "), w.flagNames())
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string {
	return strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

func zshCompletion(w words) string {
	var b strings.Builder
	b.WriteString("#compdef dsh-acp\n# zsh completion for dsh-acp\n_dsh_acp() {\n  local -a commands\n  commands=(\n")
	for _, c := range w.commands {
		fmt.Fprintf(&b, "    '%s:%s'\n", c.name, zshQuote(c.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )) && [[ $words[2] != -* ]]; then\n    _describe 'command' commands\n    return\n  fi\n  _arguments \\\n")
	for _, f := range w.flags {
		usage, _ := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "    '--%s[%s]' \\\n", f.Name, zshQuote(firstLine(usage)))
	}
	// Autoloaded from $fpath (the file _dsh-acp) it completes at once;
	// sourced (source <(dsh-acp completion zsh)) it registers itself.
	b.WriteString("    '*:file:_files'\n}\nif [ \"$funcstack[1]\" = \"_dsh-acp\" ]; then\n  _dsh_acp \"$@\"\nelse\n  compdef _dsh_acp dsh-acp\nfi\n")
	return b.String()
}

func fishCompletion(w words) string {
	var b strings.Builder
	b.WriteString("# fish completion for dsh-acp\ncomplete -c dsh-acp -f\n")
	for _, c := range w.commands {
		fmt.Fprintf(&b, "complete -c dsh-acp -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	b.WriteString("complete -c dsh-acp -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	for _, f := range w.flags {
		usage, _ := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "complete -c dsh-acp -l %s -d %s\n", f.Name, fishQuote(firstLine(usage)))
	}
	return b.String()
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// firstLine shortens a usage to what fits a completion menu.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "(;"); i > 20 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
