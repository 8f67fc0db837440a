package storecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/permission/project"
)

const rulesUsage = `Usage:
  dsh-acp rules [list]     list the commands always allowed, per project
  dsh-acp rules rm N       remove rule N of the list

A rule is added when you answer "Always allow ... in this project" (in an
editor, or [p] in dsh-acp exec). It applies to every later session whose
working directory is in that project (its git root, else the directory),
after --deny, in Ask mode. Rules live in the state directory, never in
the repository.

Flags:
`

// Rules is dsh-acp rules: it lists the commands always allowed per
// project, or removes one, and returns the exit code.
func Rules(args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := flag.NewFlagSet("dsh-acp rules", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	stateDir := fs.String("state-dir", e.StateDir, "the state `DIR` (env DSH_STATE_DIR, config.toml state-dir)")
	rest, err := settings.ParseArgs(fs, rulesUsage, e.Footer, args)
	n := 0
	if err == nil {
		n, err = rulesArgs(rest)
	}
	if code, done := settings.Settle(err, "dsh-acp rules", stdout, stderr); done {
		return code
	}
	dir, err := e.Dir(*stateDir)
	if err == nil {
		r := project.Open(dir)
		if n == 0 {
			err = printRules(stdout, r)
		} else {
			err = removeRule(stdout, r, n)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp rules:", err)
		return 1
	}
	return 0
}

// rulesArgs returns N of "rm N", 0 for the list.
func rulesArgs(rest []string) (int, error) {
	switch {
	case len(rest) == 0, len(rest) == 1 && rest[0] == "list":
		return 0, nil
	case rest[0] != "rm":
		return 0, fmt.Errorf("unexpected argument %q (rules, rules list, rules rm N)", rest[0])
	case len(rest) != 2:
		return 0, errors.New("rules rm takes one rule number (see dsh-acp rules)")
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("rules rm: %q is not a rule number (see dsh-acp rules)", rest[1])
	}
	return n, nil
}

func printRules(w io.Writer, r *project.Rules) error {
	rules, err := r.List()
	if err != nil {
		return err
	}
	rows := make([][]string, len(rules))
	for i, rule := range rules {
		rows[i] = []string{strconv.Itoa(i + 1), rule.Key, rule.Project}
	}
	return printTable(w, fmt.Sprintf("no project rules (in %s)", r.Path()), []string{"N", "COMMAND", "PROJECT"}, rows)
}

func removeRule(w io.Writer, r *project.Rules, n int) error {
	rules, err := r.List()
	if err != nil {
		return err
	}
	if n > len(rules) {
		return fmt.Errorf("no rule %d: there are %d (see dsh-acp rules)", n, len(rules))
	}
	rule := rules[n-1]
	if err := r.Remove(rule); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "removed %q in %s\n", rule.Key, rule.Project)
	return err
}
