package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

const sessionsUsage = `Usage:
  dsh-acp sessions [--cwd DIR] [--state-dir DIR]

Lists the stored sessions, newest first: id, last update, title and
working directory. Continue one with dsh-acp exec --resume ID PROMPT...

Flags:
`

// runSessions prints the stored sessions for a person.
func runSessions(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg := &config{getenv: getenv}
	fs := flag.NewFlagSet("dsh-acp sessions", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&cfg.cwd, "cwd", "", "only the sessions of this working `DIR`")
	fs.StringVar(&cfg.stateDir, "state-dir", env(getenv).first("DSH_STATE_DIR"), "the state `DIR` (env DSH_STATE_DIR)")
	rest, err := parseFlags(fs, sessionsUsage, args)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q", rest[0])
	}
	var help *helpError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.text)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "dsh-acp sessions: %v\nRun 'dsh-acp sessions --help' for usage.\n", err)
		return 2
	}
	if cfg.cwd != "" {
		if cfg.cwd, err = filepath.Abs(cfg.cwd); err != nil {
			fmt.Fprintln(stderr, "dsh-acp sessions: --cwd:", err)
			return 2
		}
	}
	dir, err := cfg.storeDir()
	if err == nil {
		err = printSessions(stdout, dir, cfg.cwd)
	}
	if err != nil {
		fmt.Fprintln(stderr, "dsh-acp sessions:", err)
		return 1
	}
	return 0
}

func printSessions(w io.Writer, dir, cwd string) error {
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tTITLE\tCWD")
	n := 0
	cursor := ""
	for {
		page, err := st.List(store.ListOptions{Cwd: cwd, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, s := range page.Sessions {
			title := s.Title
			if title == "" {
				title = "(untitled)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.Updated.Local().Format(time.DateTime), title, s.Cwd)
			n++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if n == 0 {
		_, err := fmt.Fprintf(w, "no stored sessions in %s\n", dir)
		return err
	}
	return tw.Flush()
}
