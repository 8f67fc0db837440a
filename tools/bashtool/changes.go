package bashtool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/tools"
)

// What the editor is shown of a call's changes.
const (
	// maxShownFiles files are shown in full; the rest are counted.
	maxShownFiles = 20
	// maxDiffBytes bounds the diffs' texts of one call, as JSON-encoded
	// bytes, so a stored session grows by less than 1 MiB per call; a file
	// past it is shown by its sizes.
	maxDiffBytes = 768 << 10
)

// measure starts measuring what a command of caller changes in the
// session's directory and its other roots; nil when diffs are off or the
// caller has no directory.
func measure(tr *changes.Tracker, caller tools.Caller) *changes.Mark {
	if tr == nil || caller.Cwd == "" {
		return nil
	}
	return tr.BeginAll(caller.SessionID, append([]string{caller.Cwd}, caller.Roots...)...)
}

// shown is what the editor is shown of a command's changes.
type shown struct {
	// count is how many files changed in all.
	count     int
	changes   []tools.Change
	locations []tools.Location
	// changed is what /undo takes back of them.
	changed []tools.FileChange
}

func show(cs []changes.Change) shown {
	s := shown{count: len(cs), changed: Undoable(cs)}
	s.changes, s.locations = shownChanges(cs)
	return s
}

// Undoable is what /undo keeps of cs: each file's text before (as far as
// the tracker kept it, with why not when it did not) and a digest of what
// the call left.
func Undoable(cs []changes.Change) []tools.FileChange {
	if len(cs) == 0 {
		return nil
	}
	out := make([]tools.FileChange, 0, len(cs))
	for _, c := range cs {
		fc := tools.FileChange{Path: c.Path, Existed: c.Op != changes.Created, Exists: c.Op != changes.Deleted}
		if fc.Existed {
			if c.Old.Known && c.Old.Size <= changes.MaxTextSize {
				old := c.Old.Text
				fc.Before = &old
			} else {
				fc.NotKept = notKept(c.Old)
			}
		}
		if fc.Exists {
			fc.AfterSize = c.New.Size
			if c.New.Known {
				fc.AfterSum = TextSum(c.New.Text)
			}
		}
		out = append(out, fc)
	}
	return out
}

// TextSum is the digest FileChange.AfterSum holds of a text.
func TextSum(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// notKept says why the tracker kept no text of a file side.
func notKept(s changes.Side) string {
	switch {
	case s.Binary:
		return "binary file"
	case s.Size > changes.MaxTextSize:
		// A file tool's own change keeps no more than a command's.
		return fmt.Sprintf("larger than %d KiB", changes.MaxTextSize>>10)
	}
	return "its text was not kept (the session's directory holds more text than the change tracker keeps)"
}

// withChanges adds what a command changed to its result: the count to the
// raw output, the diffs and locations for the editor.
func withChanges(r tools.Result, s shown) tools.Result {
	if s.count == 0 {
		return r
	}
	if raw, ok := r.Raw.(RawOutput); ok {
		raw.ChangedFiles = s.count
		r.Raw = raw
	}
	r.Changes, r.Locations, r.Changed = s.changes, s.locations, s.changed
	return r
}

// ShowChanges is the editor's view of what a call changed, as a command's
// is shown: the other tools that change files (the file tools) show theirs
// the same way.
func ShowChanges(cs []changes.Change) ([]tools.Change, []tools.Location) {
	return shownChanges(cs)
}

// shownChanges is the editor's view of cs: the first maxShownFiles files,
// each a diff or a line, then one line counting the rest; a location for
// each shown file that still exists.
func shownChanges(cs []changes.Change) ([]tools.Change, []tools.Location) {
	var out []tools.Change
	var locs []tools.Location
	budget := maxDiffBytes
	for i, c := range cs {
		if i == maxShownFiles {
			out = append(out, tools.Change{Line: fmt.Sprintf("… and %d more files changed", len(cs)-i)})
			break
		}
		shown, size := shownChange(c, budget)
		budget -= size
		out = append(out, shown)
		if c.Op != changes.Deleted {
			locs = append(locs, tools.Location{Path: c.Path, Line: firstChangedLine(c)})
		}
	}
	return out, locs
}

// shownChange is one file: a diff when both sides are known text and fit
// the budget (its encoded size is returned), else a line.
func shownChange(c changes.Change, budget int) (tools.Change, int) {
	if diffable(c) {
		size := jsonLen(c.Old.Text) + jsonLen(c.New.Text)
		if size <= budget {
			ch := tools.Change{Path: c.Path, NewText: c.New.Text}
			if c.Op != changes.Created {
				old := c.Old.Text
				ch.OldText = &old
			}
			return ch, size
		}
	}
	return tools.Change{Path: c.Path, Line: changeLine(c)}, 0
}

func diffable(c changes.Change) bool {
	switch c.Op {
	case changes.Created:
		return c.New.Known
	case changes.Deleted:
		return c.Old.Known
	}
	return c.Old.Known && c.New.Known
}

// changeLine says what happened to a file shown without a diff.
func changeLine(c changes.Change) string {
	if c.Old.Binary || c.New.Binary {
		what := "changed"
		switch c.Op {
		case changes.Created:
			what = "created"
		case changes.Deleted:
			what = "deleted"
		}
		return c.Path + ": binary file " + what
	}
	switch c.Op {
	case changes.Created:
		return fmt.Sprintf("%s: created (%s)", c.Path, kib(c.New.Size))
	case changes.Deleted:
		return fmt.Sprintf("%s: deleted (%s)", c.Path, kib(c.Old.Size))
	}
	return fmt.Sprintf("%s: %s → %s", c.Path, kib(c.Old.Size), kib(c.New.Size))
}

// kib is a size in whole KiB, rounded up (a non-empty file is never 0 KiB).
func kib(n int64) string {
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

// firstChangedLine is the 0-based line of a file's first change: 0 for a
// new text file, nil when the file is not text.
func firstChangedLine(c changes.Change) *int {
	if !c.New.Known {
		return nil
	}
	line := 0
	if c.Old.Known {
		old, cur := c.Old.Text, c.New.Text
		n := 0
		for n < len(old) && n < len(cur) && old[n] == cur[n] {
			n++
		}
		line = strings.Count(old[:n], "\n")
	}
	return &line
}

// jsonLen is the length of s as encoding/json writes it (quotes, escapes,
// HTML-safe < > &, U+2028 and U+2029), without writing it.
func jsonLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
			n += 6
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}

// pendingChanges holds what background tasks changed from their start until
// the bash_output call that reports their end takes it. A task's changes are
// measured as it ends, on the executor's goroutine for that task and before
// its completion notice is queued, so a command that runs after the notice
// never sees them as its own.
type pendingChanges struct {
	// mu guards tasks and told.
	mu    sync.Mutex
	tasks map[string]*taskChanges
	// told are, by owner, the tasks whose end a notice reported, in order.
	told map[string][]toldTask
}

// toldTask is a task whose end a completion notice reported.
type toldTask struct {
	id, notice string
	raw        RawOutput
	// delivered: the notice went with a model request.
	delivered bool
}

// tell records that a notice reported a measured task's end.
func (p *pendingChanges) tell(owner, id, notice string, raw RawOutput) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.tasks[id]; !ok {
		return
	}
	if p.told == nil {
		p.told = map[string][]toldTask{}
	}
	p.told[owner] = append(p.told[owner], toldTask{id: id, notice: notice, raw: raw})
}

// delivered marks the notices of owner's tasks told so far as delivered.
func (p *pendingChanges) delivered(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.told[owner] {
		p.told[owner][i].delivered = true
	}
}

// noticed takes what the tasks of owner whose end a delivered notice
// reported changed; a task that changed nothing, or whose bash_output call
// showed it already, has nothing to show.
func (p *pendingChanges) noticed(owner string) []tools.Noticed {
	p.mu.Lock()
	var told, kept []toldTask
	for _, t := range p.told[owner] {
		if t.delivered {
			told = append(told, t)
		} else {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		delete(p.told, owner)
	} else {
		p.told[owner] = kept
	}
	p.mu.Unlock()
	var out []tools.Noticed
	for _, t := range told {
		if s := p.take(t.id); s.count > 0 {
			r := withChanges(tools.Result{Text: t.notice, Raw: t.raw, Failed: t.raw.failed()}, s)
			out = append(out, tools.Noticed{TaskID: t.id, Result: r})
		}
	}
	return out
}

// taskChanges is one background task's measure, made once and kept as the
// editor will be shown it (so at most what one call shows).
type taskChanges struct {
	owner string
	once  sync.Once
	mark  *changes.Mark
	shown shown
}

func (t *taskChanges) result() shown {
	t.once.Do(func() {
		t.shown = show(t.mark.End())
		t.mark = nil
	})
	return t.shown
}

// add keeps a task's measure; the executor calls it (Spec.Registered)
// before the task can end.
func (p *pendingChanges) add(id, owner string, m *changes.Mark) {
	if m == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tasks == nil {
		p.tasks = map[string]*taskChanges{}
	}
	p.tasks[id] = &taskChanges{owner: owner, mark: m}
}

// ended measures a task that just ended; a task that never ran is dropped
// unmeasured.
func (p *pendingChanges) ended(id string, ran bool) {
	p.mu.Lock()
	t := p.tasks[id]
	if !ran {
		delete(p.tasks, id)
	}
	p.mu.Unlock()
	switch {
	case t == nil:
	case !ran:
		t.mark.Discard()
	default:
		t.result()
	}
}

// take returns what an ended task changed, once; it measures the task now
// if its end has not been handled yet.
func (p *pendingChanges) take(id string) shown {
	p.mu.Lock()
	t := p.tasks[id]
	delete(p.tasks, id)
	p.mu.Unlock()
	if t == nil {
		return shown{}
	}
	return t.result()
}

// forget drops what owner's tasks changed: nobody will read it.
func (p *pendingChanges) forget(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, t := range p.tasks {
		if t.owner == owner {
			delete(p.tasks, id)
		}
	}
	delete(p.told, owner)
}
