package storecmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Package storecmd is the commands over the state directory: dsh-acp
// sessions (list, show, rm, prune the stored sessions) and dsh-acp rules
// (the commands always allowed in a project).
const sessionsUsage = `Usage:
  dsh-acp sessions [--cwd DIR] [--json|--ids]    list the stored sessions, newest first
  dsh-acp sessions show ID                       print a session's conversation
  dsh-acp sessions rm ID...                      delete stored sessions
  dsh-acp sessions prune --older-than DURATION   delete those not updated for DURATION

The list shows id, last update, title and working directory; --json
prints one JSON array of {id, cwd, title, created, updated}; --ids one id
a line (for scripts and shell completion). An ID may be the first 6 or
more characters of one, wherever an id is taken (exec --resume too).
prune takes Go's durations (72h, 90m; d is not a unit), asks nothing,
and lists what it deleted; with --cwd, only that directory's sessions.
Continue a session with dsh-acp exec --resume ID PROMPT... (or
--continue for the newest of the current directory).

Flags:
`

// Env is what the commands need of the program.
type Env struct {
	Stdout, Stderr io.Writer
	// StateDir is --state-dir's default: DSH_STATE_DIR, else config.toml's
	// state-dir, so they read the store the agent writes.
	StateDir string
	// Dir is the state directory --state-dir's value names: the value, or
	// the default one when it is "".
	Dir func(flagValue string) (string, error)
	// Footer closes the help.
	Footer string
}

// Sessions is dsh-acp sessions: it lists, shows or deletes the stored
// sessions, and returns the exit code.
func Sessions(args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := flag.NewFlagSet("dsh-acp sessions", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cwd := fs.String("cwd", "", "only the sessions of this working `DIR`")
	stateDir := fs.String("state-dir", e.StateDir, "the state `DIR` (env DSH_STATE_DIR, config.toml state-dir)")
	asJSON := fs.Bool("json", false, "list as a JSON array")
	idsOnly := fs.Bool("ids", false, "list the ids only, one a line")
	olderThan := fs.Duration("older-than", 0, "prune: delete the sessions last updated longer ago than this `DURATION` (72h)")
	rest, err := settings.ParseArgs(fs, sessionsUsage, e.Footer, args)
	if err == nil {
		err = checkSessionsArgs(rest, *olderThan)
	}
	if code, done := settings.Settle(err, "dsh-acp sessions", stdout, stderr); done {
		return code
	}
	if *cwd != "" {
		if *cwd, err = filepath.Abs(*cwd); err != nil {
			fmt.Fprintln(stderr, "dsh-acp sessions: --cwd:", err)
			return 2
		}
	}
	st, err := e.open(*stateDir)
	if err == nil {
		err = sessionsDo(stdout, stderr, st, *cwd, rest, *idsOnly, *asJSON, *olderThan)
	}
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp sessions:", storeSentence(err))
		return 1
	}
	return 0
}

// open opens the state directory --state-dir names, for reading it.
func (e Env) open(flagValue string) (*store.Store, error) {
	dir, err := e.Dir(flagValue)
	if err != nil {
		return nil, err
	}
	return Open(dir)
}

// sessionsDo does what the words after sessions ask.
func sessionsDo(stdout, stderr io.Writer, st *store.Store, cwd string, rest []string, idsOnly, asJSON bool, olderThan time.Duration) (err error) {
	switch {
	case len(rest) == 0 && idsOnly:
		err = printSessionIDs(stdout, st, cwd)
	case len(rest) == 0 && asJSON:
		err = printSessionsJSON(stdout, st, cwd)
	case len(rest) == 0:
		err = printSessions(stdout, st, cwd)
	case rest[0] == "show":
		var id string
		if id, err = ResolveID(st, rest[1]); err == nil {
			err = showSession(stdout, st, id)
		}
	case rest[0] == "prune":
		err = pruneSessions(stdout, stderr, st, cwd, olderThan, time.Now())
	default:
		err = removeSessions(stdout, stderr, st, rest[1:])
	}
	return err
}

func checkSessionsArgs(rest []string, olderThan time.Duration) error {
	switch {
	case len(rest) == 0:
		return nil
	case rest[0] != "show" && rest[0] != "rm" && rest[0] != "prune":
		return fmt.Errorf("unexpected argument %q (sessions, sessions show ID, sessions rm ID..., sessions prune --older-than DURATION)", rest[0])
	case rest[0] == "show" && len(rest) != 2:
		return errors.New("sessions show takes one session ID")
	case rest[0] == "rm" && len(rest) < 2:
		return errors.New("sessions rm takes one session ID or more")
	case rest[0] == "prune" && len(rest) != 1:
		return fmt.Errorf("sessions prune takes no argument, got %q (the age is --older-than DURATION)", rest[1])
	case rest[0] == "prune" && olderThan <= 0:
		return errors.New("sessions prune needs --older-than DURATION, e.g. --older-than 72h (Go's durations: h, m, s)")
	case rest[0] != "prune" && olderThan != 0:
		return errors.New("--older-than is for sessions prune")
	}
	return nil
}

// removeSessions deletes each session ids name (whole or a unique
// prefix), going on past one that cannot be: every id is tried, and the
// first error is returned for the exit status.
func removeSessions(stdout, stderr io.Writer, st *store.Store, ids []string) error {
	var first error
	for _, arg := range ids {
		id, err := ResolveID(st, arg)
		if err == nil {
			err = st.Delete(id)
		}
		if err != nil {
			if first == nil {
				first = err
			} else {
				fmt.Fprintln(stderr, "dsh-acp sessions:", storeSentence(err))
			}
			continue
		}
		fmt.Fprintln(stdout, "deleted session", id)
	}
	return first
}

// pruneSessions deletes the sessions (of cwd, if given) last updated
// before now-age, and says what it deleted. A session open in a running
// agent is left, and said so.
func pruneSessions(stdout, stderr io.Writer, st *store.Store, cwd string, age time.Duration, now time.Time) error {
	infos, err := allSessions(st, cwd)
	if err != nil {
		return err
	}
	cut := now.Add(-age)
	n, kept := 0, 0
	for _, s := range infos {
		if !s.Updated.Before(cut) {
			continue
		}
		if err := st.Delete(s.ID); err != nil {
			fmt.Fprintln(stderr, "dsh-acp sessions: prune:", storeSentence(err))
			kept++
			continue
		}
		n++
		fmt.Fprintf(stdout, "deleted session %s  %s  %s\n", s.ID, s.Updated.Local().Format(time.DateTime), titleOf(s))
	}
	where := st.Dir()
	if cwd != "" {
		where = cwd
	}
	fmt.Fprintf(stdout, "pruned %d session(s) not updated for %v (since %s) in %s\n", n, age, cut.Local().Format(time.DateTime), where)
	if kept > 0 {
		return fmt.Errorf("prune: %d old session(s) could not be deleted (above)", kept)
	}
	return nil
}

// printSessionIDs prints the ids, newest first, one a line.
func printSessionIDs(w io.Writer, st *store.Store, cwd string) error {
	infos, err := allSessions(st, cwd)
	if err != nil {
		return err
	}
	for _, s := range infos {
		fmt.Fprintln(w, s.ID)
	}
	return nil
}

// storeSentence says what a store error means for the person.
func storeSentence(err error) string {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return err.Error() + " (dsh-acp sessions lists them)"
	case errors.Is(err, store.ErrLocked), errors.Is(err, store.ErrOpen):
		return err.Error() + ": it is open in a running agent; end that first"
	}
	return err.Error()
}

// Open opens the state directory dir, for reading it.
func Open(dir string) (*store.Store, error) {
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("the state directory %s: %w", dir, err)
	}
	return st, nil
}

// allSessions lists every stored session (of cwd, if given), newest first.
func allSessions(st *store.Store, cwd string) ([]store.Info, error) {
	var out []store.Info
	cursor := ""
	for {
		page, err := st.List(store.ListOptions{Cwd: cwd, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Sessions...)
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

type sessionJSON struct {
	ID      string    `json:"id"`
	Cwd     string    `json:"cwd"`
	Title   string    `json:"title"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func printSessionsJSON(w io.Writer, st *store.Store, cwd string) error {
	infos, err := allSessions(st, cwd)
	if err != nil {
		return err
	}
	out := make([]sessionJSON, 0, len(infos))
	for _, s := range infos {
		out = append(out, sessionJSON{ID: s.ID, Cwd: s.Cwd, Title: s.Title, Created: s.Created, Updated: s.Updated})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// showSession prints a session's conversation for a person: the prompts,
// the answers, and each tool call with its result.
func showSession(w io.Writer, st *store.Store, id string) error {
	sess, err := st.Open(id)
	if err != nil {
		return err
	}
	defer sess.Close()
	state := sess.State()
	title := state.Title
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(w, "session %s: %s\n%s, created %s\n", id, title, state.Cwd, sess.Header().Created.Local().Format(time.DateTime))
	for _, e := range sess.Entries() {
		p, err := e.Decode()
		if err != nil {
			continue
		}
		showEntry(w, p)
	}
	return nil
}

// callLine is a tool call as a person reads it: a command as "$ command",
// anything else as its name and arguments.
func callLine(c store.ToolCall) string {
	var args struct {
		Command string `json:"command"`
	}
	if c.Name == "bash" && json.Unmarshal([]byte(c.Arguments), &args) == nil && args.Command != "" {
		return "$ " + args.Command
	}
	if c.Name == tools.UpdatePlanName {
		if plan, ok := planLines(c.Arguments); ok {
			return plan
		}
	}
	return "[" + c.Name + "] " + c.Arguments
}

// planLines is an update_plan call as exec prints the plan: one step a
// line with its mark; ok false for arguments that were no plan.
func planLines(arguments string) (string, bool) {
	plan, err := tools.ParsePlan(json.RawMessage(arguments))
	if err != nil || len(plan.Entries) == 0 {
		return "", false
	}
	return tools.PlanBlock(plan.Entries), true
}

func showEntry(w io.Writer, p store.Payload) {
	switch v := p.(type) {
	case store.Prompt:
		fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(v.Text, "\n", "\n> "))
	case store.Assistant:
		if v.Text != "" {
			fmt.Fprintf(w, "\n%s\n", v.Text)
		}
		for _, c := range v.ToolCalls {
			fmt.Fprintf(w, "\n%s\n", callLine(c))
		}
	case store.ToolResult:
		text := v.Text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fmt.Fprint(w, text)
	case store.Compaction:
		fmt.Fprintf(w, "\n(earlier conversation summarised: %d messages)\n", v.Replaced)
	}
}

func printSessions(w io.Writer, st *store.Store, cwd string) error {
	infos, err := allSessions(st, cwd)
	if err != nil {
		return err
	}
	rows := make([][]string, len(infos))
	for i, s := range infos {
		rows[i] = []string{s.ID, s.Updated.Local().Format(time.DateTime), titleOf(s), s.Cwd}
	}
	return printTable(w, "no stored sessions in "+st.Dir(), []string{"ID", "UPDATED", "TITLE", "CWD"}, rows)
}

// printTable prints rows under header in aligned columns, or the line
// empty when there is no row.
func printTable(w io.Writer, empty string, header []string, rows [][]string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, empty)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
