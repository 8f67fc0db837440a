package sessions

import (
	"fmt"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/sessions/store"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Bounds of a session's undo journal. The oldest records go first past
// either; what a session holds in memory for /undo stays under
// journalMaxBytes whatever its calls changed.
const (
	// journalMaxRecords is how many calls' changes are kept.
	journalMaxRecords = 50
	// journalMaxBytes bounds the text kept of the files before the calls.
	journalMaxBytes = 32 << 20
)

// notStored is why a file's text before a call is not in the session's
// log: the call's record would pass CallMax.
var notStored = fmt.Sprintf("its text was not stored with the session (at most %d MiB a call), and dsh-acp restarted since", CallMax>>20)

// journal is what a session's calls changed, oldest first, for /undo. An
// /undo's own record (Undid > 0) is only ever the newest: the records it
// took back stay below it, undone, until an /undo of it puts them back
// (Redone) or the next call's change makes it final (push drops it with
// them).
type journal struct {
	// mu guards recs and bytes.
	mu    sync.Mutex
	recs  []tools.ChangeRecord
	bytes int
}

// push adds a call's changes.
func (j *journal) push(r tools.ChangeRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.recs); n > 0 && j.recs[n-1].Undid > 0 {
		j.drop(n - 1 - j.recs[n-1].Undid)
	}
	j.recs = append(j.recs, r)
	j.bytes += recordBytes(r)
	for len(j.recs) > 1 && (len(j.recs) > journalMaxRecords || j.bytes > journalMaxBytes) {
		j.bytes -= recordBytes(j.recs[0])
		j.recs = j.recs[1:]
	}
}

// drop keeps the records before i.
func (j *journal) drop(i int) {
	i = max(i, 0)
	for _, r := range j.recs[i:] {
		j.bytes -= recordBytes(r)
	}
	j.recs = j.recs[:i]
}

func (j *journal) last(n int) []tools.ChangeRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []tools.ChangeRecord
	for i := len(j.recs) - 1; i >= 0 && len(out) < n; i-- {
		r := j.recs[i]
		if r.Undid > 0 {
			// An /undo is taken back alone.
			return []tools.ChangeRecord{r}
		}
		out = append(out, r)
	}
	return out
}

// undone adds an /undo's record: the newest rec.Undid records were taken
// back. False when they are no longer the newest (nothing is changed).
func (j *journal) undone(rec tools.ChangeRecord) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if rec.Undid <= 0 || rec.Undid > len(j.recs) || (len(j.recs) > 0 && j.recs[len(j.recs)-1].Undid > 0) {
		return false
	}
	j.recs = append(j.recs, rec)
	j.bytes += recordBytes(rec)
	return true
}

// redone drops the newest record, an /undo's: what it took back is the
// newest again. False when the newest is no /undo.
func (j *journal) redone() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.recs)
	if n == 0 || j.recs[n-1].Undid == 0 {
		return false
	}
	j.drop(n - 1)
	return true
}

// recordBytes is the text r keeps.
func recordBytes(r tools.ChangeRecord) int {
	n := 0
	for _, f := range r.Files {
		if f.Before != nil {
			n += len(*f.Before)
		}
	}
	return n
}

// Changes is the session's record of what its calls changed, for /undo.
func (s *Session) Changes() agent.ChangeLog { return changeLog{s} }

// changeLog is a session's journal as /undo reads and changes it: each
// change is stored with the session as it is made.
type changeLog struct{ s *Session }

func (c changeLog) Last(n int) []tools.ChangeRecord { return c.s.changes.last(n) }

func (c changeLog) Undone(rec tools.ChangeRecord) bool {
	if !c.s.changes.undone(rec) {
		return false
	}
	c.s.persist(storedChanges(rec))
	c.s.Sync()
	return true
}

func (c changeLog) Redone() bool {
	if !c.s.changes.redone() {
		return false
	}
	c.s.persist(store.Changes{Redo: true})
	c.s.Sync()
	return true
}

// addChanges records what a call changed.
func (s *Session) addChanges(callID, title string, files []tools.FileChange) {
	if len(files) == 0 {
		return
	}
	r := tools.ChangeRecord{CallID: callID, Title: title, Files: files}
	s.changes.push(r)
	s.persist(storedChanges(r))
}

// storedChanges is r as the log keeps it: the files' texts before, in
// order, as long as the entry stays under CallMax; past it a file is
// stored without its text (undoable in this process, not after a restart).
func storedChanges(r tools.ChangeRecord) store.Changes {
	c := store.Changes{CallID: r.CallID, Title: r.Title, Undid: r.Undid, Files: make([]store.ChangedFile, len(r.Files))}
	room := CallMax - callEnvelope - entrySize(store.Changes{CallID: r.CallID, Title: r.Title, Undid: r.Undid})
	for i, f := range r.Files {
		sf := store.ChangedFile{Path: f.Path, Existed: f.Existed, Exists: f.Exists, NotKept: f.NotKept, AfterSize: f.AfterSize, AfterSum: f.AfterSum}
		room -= entrySize(store.Changes{Files: []store.ChangedFile{sf}})
		if f.Before != nil {
			with := sf
			with.Before = f.Before
			if size := entrySize(store.Changes{Files: []store.ChangedFile{with}}) - entrySize(store.Changes{Files: []store.ChangedFile{sf}}); size <= room {
				sf, room = with, room-size
			} else {
				sf.NotKept = notStored
			}
		}
		c.Files[i] = sf
	}
	return c
}

// replayChanges applies a stored step of the journal, on load.
func (j *journal) replayChanges(c store.Changes) {
	if c.Redo {
		j.redone()
		return
	}
	r := tools.ChangeRecord{CallID: c.CallID, Title: c.Title, Undid: c.Undid, Files: make([]tools.FileChange, len(c.Files))}
	for i, f := range c.Files {
		r.Files[i] = tools.FileChange{Path: f.Path, Existed: f.Existed, Exists: f.Exists, Before: f.Before, NotKept: f.NotKept,
			AfterSize: f.AfterSize, AfterSum: f.AfterSum}
	}
	if r.Undid > 0 {
		j.undone(r)
		return
	}
	j.push(r)
}
