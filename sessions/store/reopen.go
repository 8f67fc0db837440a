package store

import (
	"fmt"
	"slices"

	"go.uber.org/zap"
)

// Reopen opens the stored session id (as OpenState does: its lock taken,
// its State folded, its entries left in the file for Scan) to go on in
// cwd with the extra project roots given, and records what going on there
// means: the move, when cwd is not the directory the session was stored
// with, the roots when they are not those stored, and the end ("gone") of each task
// that was running when its last process stopped (State().RunningTasks,
// which the caller tells the model of once). State stays as stored. The
// errors are OpenState's; an entry that cannot be written yet stays
// buffered for the next Sync, as with Append.
func (s *Store) Reopen(id, cwd string, roots []string) (*Session, error) {
	sess, err := s.OpenState(id)
	if err != nil {
		return nil, err
	}
	state := sess.State()
	if cwd != state.Cwd {
		sess.appendLogged(Cwd{Cwd: cwd})
	}
	if !slices.Equal(roots, state.Roots) {
		sess.appendLogged(Roots{Roots: slices.Clone(roots)})
	}
	for _, t := range state.RunningTasks {
		sess.appendLogged(TaskEnded{ID: t, State: "gone"})
	}
	return sess, nil
}

// appendLogged is Append for an entry whose failure the caller cannot act
// on: it is logged, and the entry stays buffered for the next Sync.
func (sess *Session) appendLogged(p Payload) {
	if _, err := sess.Append(p); err != nil {
		sess.store.log.Warn("session entry not written yet", zap.String("session", sess.id), zap.String("entry", string(p.Kind())),
			zap.Error(fmt.Errorf("reopen: %w", err)))
	}
}
