package storecmd

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/sessions/store"
)

// Newest is the stored session exec --continue resumes: the newest of the
// working directory cwd, in the state directory dir.
func Newest(dir, cwd string) (string, error) {
	st, err := store.New(store.Options{Dir: dir})
	if err != nil {
		return "", fmt.Errorf("--continue: the state directory: %w", err)
	}
	page, err := st.List(store.ListOptions{Cwd: cwd})
	if err != nil {
		return "", fmt.Errorf("--continue: %w", err)
	}
	if len(page.Sessions) == 0 {
		return "", fmt.Errorf("--continue: no stored session in %s to continue (start one with dsh-acp exec PROMPT)", cwd)
	}
	return page.Sessions[0].ID, nil
}

// Whole is the whole id of the stored session exec --resume names (whole,
// or a unique prefix of 6 characters or more), in the state directory dir.
func Whole(dir, id string) (string, error) {
	st, err := Open(dir)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	whole, err := ResolveID(st, id)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	return whole, nil
}

// minIDPrefix is the shortest prefix of a session id accepted for the
// whole id.
const minIDPrefix = 6

// ResolveID is the stored session id names: the id itself, or the one id
// that starts with it (6 characters or more). An ambiguous prefix is an
// error listing the sessions it could mean.
func ResolveID(st *store.Store, id string) (string, error) {
	infos, err := allSessions(st, "")
	if err != nil {
		return "", err
	}
	var matches []store.Info
	for _, s := range infos {
		if s.ID == id {
			return id, nil
		}
		if strings.HasPrefix(s.ID, id) {
			matches = append(matches, s)
		}
	}
	switch {
	case len(matches) == 0 || len(id) < minIDPrefix && len(matches) > 0:
		if len(matches) > 0 {
			return "", fmt.Errorf("session id %q is too short: give at least %d characters of it (dsh-acp sessions lists them)", id, minIDPrefix)
		}
		return "", fmt.Errorf("session %q not found in %s (dsh-acp sessions lists them)", id, st.Dir())
	case len(matches) > 1:
		var lines []string
		for _, s := range matches {
			lines = append(lines, fmt.Sprintf("  %s  %s  %s", s.ID, s.Updated.Local().Format("2006-01-02 15:04"), titleOf(s)))
		}
		return "", fmt.Errorf("session id %q is ambiguous: it starts %d sessions; give more of it:\n%s", id, len(matches), strings.Join(lines, "\n"))
	}
	return matches[0].ID, nil
}

// titleOf is a session's title as the list shows it.
func titleOf(s store.Info) string {
	if s.Title == "" {
		return "(untitled)"
	}
	return s.Title
}
