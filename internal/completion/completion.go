// Package completion writes dsh-acp's shell completion scripts (bash, zsh,
// fish) from the program's commands and flags, so a command or flag added
// to the program is completed at once.
package completion

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Usage is the command's help.
const Usage = `Usage:
  dsh-acp completion bash|zsh|fish

Prints a completion script. For example:
  bash:  source <(dsh-acp completion bash)
  zsh:   dsh-acp completion zsh > "${fpath[1]}/_dsh-acp"
  fish:  dsh-acp completion fish > ~/.config/fish/completions/dsh-acp.fish
`

// Command is one subcommand as the scripts complete it.
type Command struct{ Name, Summary string }

// Run is dsh-acp completion: it prints the script for the shell args
// names, completing commands and the flags of flags, and returns the
// exit code.
func Run(args []string, stdout, stderr io.Writer, commands []Command, flags *flag.FlagSet) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, Usage)
		return 0
	}
	if len(args) != 1 {
		fmt.Fprint(stderr, "dsh-acp completion: name one shell\n"+Usage)
		return 2
	}
	w := words{commands: commands}
	flags.VisitAll(func(f *flag.Flag) { w.flags = append(w.flags, f) })
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion(w))
	case "zsh":
		fmt.Fprint(stdout, zshCompletion(w))
	case "fish":
		fmt.Fprint(stdout, fishCompletion(w))
	default:
		fmt.Fprintf(stderr, "dsh-acp completion: no script for %q (bash, zsh or fish)\n", args[0])
		return 2
	}
	return 0
}

// words are what the scripts complete: subcommands, and flags (with "--").
type words struct {
	commands []Command
	flags    []*flag.Flag
}

// dirFlags take a directory, fileFlags a file.
func dirFlags() []string { return []string{"cwd", "state-dir"} }

func fileFlags() []string {
	return []string{"script", "script-record", "mcp-config", "log-file", "docker-helper"}
}

// values are the words flag f takes ("off|high|max" in its usage), nil
// for a free value.
func values(f *flag.Flag) []string {
	// The flags whose usage does not spell their values as a|b|c.
	switch f.Name {
	case "default-mode":
		return []string{"ask", "sandbox", "auto"}
	case "log-level":
		return []string{"debug", "info", "warn", "error"}
	}
	name, _ := flag.UnquoteUsage(f)
	if strings.Contains(name, "|") {
		return strings.Split(name, "|")
	}
	return nil
}

func (w words) commandNames() string {
	var names []string
	for _, c := range w.commands {
		names = append(names, c.Name)
	}
	return strings.Join(names, " ")
}

func (w words) flagNames() string {
	var names []string
	for _, f := range w.flags {
		names = append(names, "--"+f.Name)
	}
	return strings.Join(names, " ")
}

// bashValueCases are the case arms that complete a flag's value after it.
func (w words) bashValueCases() string {
	var b strings.Builder
	for _, f := range w.flags {
		if v := values(f); v != nil {
			fmt.Fprintf(&b, "    --%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", f.Name, strings.Join(v, " "))
		}
	}
	fmt.Fprintf(&b, "    --%s) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", strings.Join(dirFlags(), "|--"))
	fmt.Fprintf(&b, "    --%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", strings.Join(fileFlags(), "|--"))
	b.WriteString("    --resume) COMPREPLY=($(compgen -W \"$(_dsh_acp_ids)\" -- \"$cur\")); return ;;\n")
	return b.String()
}

// The session ids come from the program itself (sessions --ids), in the
// state directory a --state-dir on the line names.
const bashIDs = `_dsh_acp_ids() {
  local i state=()
  for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
    [[ ${COMP_WORDS[i]} == --state-dir ]] && state=(--state-dir "${COMP_WORDS[i+1]}")
  done
  "${COMP_WORDS[0]}" sessions --ids "${state[@]}" 2>/dev/null
}
`

func bashCompletion(w words) string {
	return fmt.Sprintf(`# bash completion for dsh-acp
%s_dsh_acp() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  if [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  case $prev in
%s  esac
  case ${COMP_WORDS[1]} in
    completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
    help) COMPREPLY=($(compgen -W %q -- "$cur")); return ;;
    sessions)
      local i sub=
      for ((i = 2; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in show|rm|prune) sub=${COMP_WORDS[i]}; break ;; esac
      done
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--cwd --state-dir --json --ids --older-than" -- "$cur"))
      elif [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "show rm prune" -- "$cur"))
      elif [[ $sub != prune ]]; then
        COMPREPLY=($(compgen -W "$(_dsh_acp_ids)" -- "$cur"))
      fi
      return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _dsh_acp dsh-acp
`, bashIDs, w.commandNames(), w.bashValueCases(), w.commandNames(), w.flagNames())
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string {
	return strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

func zshCompletion(w words) string {
	var b strings.Builder
	b.WriteString("#compdef dsh-acp\n# zsh completion for dsh-acp\n")
	// The ids come from the program itself (sessions --ids), in the state
	// directory a --state-dir on the line names.
	b.WriteString("_dsh_acp_ids() {\n  local -a ids state\n  local i=${words[(I)--state-dir]}\n  (( i )) && state=(--state-dir ${words[i+1]})\n  ids=(${(f)\"$(${words[1]} sessions --ids $state 2>/dev/null)\"})\n  compadd -a ids\n}\n")
	b.WriteString("_dsh_acp() {\n  local -a commands\n  commands=(\n")
	for _, c := range w.commands {
		fmt.Fprintf(&b, "    '%s:%s'\n", c.Name, zshQuote(c.Summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )) && [[ $words[2] != -* ]]; then\n    _describe 'command' commands\n    return\n  fi\n")
	b.WriteString("  if [[ $words[2] == sessions && $words[CURRENT] != -* ]]; then\n    local sub=${${(M)words[3,CURRENT-1]:#(show|rm|prune)}[1]}\n    case $sub in\n      '') compadd show rm prune ;;\n      show|rm) _dsh_acp_ids ;;\n    esac\n    return\n  fi\n  _arguments \\\n")
	for _, f := range w.flags {
		usage, _ := flag.UnquoteUsage(f)
		action := ""
		switch v := values(f); {
		case v != nil:
			action = ":value:(" + strings.Join(v, " ") + ")"
		case f.Name == "resume":
			action = ":session:_dsh_acp_ids"
		case slices.Contains(dirFlags(), f.Name):
			action = ":directory:_files -/"
		case slices.Contains(fileFlags(), f.Name):
			action = ":file:_files"
		}
		fmt.Fprintf(&b, "    '--%s[%s]%s' \\\n", f.Name, zshQuote(firstLine(usage)), action)
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
		fmt.Fprintf(&b, "complete -c dsh-acp -n __fish_use_subcommand -a %s -d %s\n", c.Name, fishQuote(c.Summary))
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
