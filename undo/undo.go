// Package undo answers /undo: it puts back the files a session's newest
// calls changed — their text before, created files removed, deleted files
// made again — as far as the change tracker kept them, through the
// executor's file operations (so a confined session's undo is confined as
// its file tools are, and a container's files are the ones changed).
//
// Decisions the issue leaves open:
//   - A call that changed nothing is no change: /undo takes back the newest
//     call that changed a file.
//   - A file is "changed since" when it is not what the call left: its
//     content's digest differs, or (for a file whose text was not kept) its
//     size, or it exists where the call removed it. Then the user is asked
//     once for the whole /undo, naming the files; a rejection (or no one to
//     ask) touches nothing.
//   - /undo's own change is recorded like a call's, and only an /undo right
//     after takes it back (all of it, whatever N was): the next call's
//     change makes it final.
//   - A file made again gets the mode a new file gets (0644); a directory a
//     command made is left, empty or not.
package undo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

// Executor is what undo uses of the executor: a session's file operations.
type Executor interface {
	Files(a executor.FileAccess) (executor.Files, error)
}

// Options configures an Undoer.
type Options struct {
	// Executor does every file operation. Required.
	Executor Executor
	// Changes, when set, measures the undo's writes as a call's are, so a
	// later command does not report them as its own; nil means none.
	Changes *changes.Tracker
	// Notify, when set, queues a notice for the session's next model
	// request: the model is told what /undo put back, so that it does not
	// take its earlier changes for still made.
	Notify func(sessionID, text string)
}

// Undoer answers /undo (agent.Undoer).
type Undoer struct {
	opts Options
}

// New returns an Undoer.
func New(opts Options) (*Undoer, error) {
	if opts.Executor == nil {
		return nil, errors.New("undo: nil executor")
	}
	return &Undoer{opts: opts}, nil
}

var _ agent.Undoer = (*Undoer)(nil)

// maxCount bounds N in /undo N; a session keeps fewer records anyway.
const maxCount = 1000

// maxRead is the most of a file read to tell whether it is what the call
// left: the file tools write files of up to 16 MiB.
const maxRead = 16 << 20

// Undo is agent.Undoer's.
func (u *Undoer) Undo(ctx context.Context, req agent.UndoRequest) {
	say := func(text string) {
		req.Emit(agent.Event{Kind: agent.EventText, Text: text, MessageID: uuid.NewString()})
	}
	n, ok := count(req.Arg)
	if !ok {
		say(usage)
		return
	}
	recs := req.Changes.Last(n)
	if len(recs) == 0 {
		say("Nothing to undo: no command or edit of this session changed a file since it started (or since dsh-acp restarted, for what was not stored).")
		return
	}
	redo := recs[0].Undid > 0
	if redo && n > 1 {
		say(fmt.Sprintf("The last change of this session is an /undo (of %s): /undo alone puts it back; nothing was changed.", plural(recs[0].Undid, "change")))
		return
	}
	call := agent.CallInfo{ID: "undo-" + uuid.NewString(), Name: agent.CommandUndo, Args: fmt.Sprintf(`{"count":%d}`, len(recs)),
		Call: tools.Call{Title: title(recs, redo), Kind: tools.KindEdit, Cwd: req.Caller.Cwd}}
	req.Emit(agent.Event{Kind: agent.EventToolCall, Call: call})
	r := u.run(ctx, req, call, recs, redo, n)
	req.Emit(agent.Event{Kind: agent.EventToolResult, Call: call, Result: r})
	say(r.Text)
}

// run plans the undo, asks when it must, makes it and records it.
func (u *Undoer) run(ctx context.Context, req agent.UndoRequest, call agent.CallInfo, recs []tools.ChangeRecord, redo bool, n int) tools.Result {
	sandboxed := false
	if req.Approver != nil {
		ap, err := req.Approver.Approve(ctx, agent.CallInfo{ID: call.ID, Name: call.Name, Args: call.Args,
			Call: tools.Call{Title: call.Call.Title, Kind: call.Call.Kind, Subject: tools.Subject{Kind: tools.UserCommand}}})
		if err != nil || !ap.Allowed {
			return failed("Nothing was undone: " + refusal(err, ap))
		}
		sandboxed = ap.Sandboxed
	}
	x, err := u.opts.Executor.Files(executor.FileAccess{Owner: req.Caller.SessionID, Root: req.Caller.Cwd, Sandboxed: sandboxed})
	if err != nil {
		return failed(fmt.Sprintf("Nothing was undone: the files cannot be reached with this executor: %v", err))
	}
	p := plan(x, recs)
	if len(p.steps) == 0 {
		return failed("Nothing was undone:\n" + p.report(req.Caller.Cwd, nil, redo))
	}
	if changed := p.changedSince(); len(changed) > 0 {
		if err := confirm(ctx, req, call, p, changed); err != nil {
			return failed("Nothing was undone: " + err.Error())
		}
	}
	mark := u.measure(req.Caller)
	done := p.apply(x)
	mark.End()
	inverse := p.inverse(done)
	kept := false
	if len(inverse) > 0 {
		if redo {
			kept = req.Changes.Redone()
		} else {
			kept = req.Changes.Undone(tools.ChangeRecord{CallID: call.ID, Title: call.Call.Title, Files: inverse, Undid: len(recs)})
		}
	}
	text := p.report(req.Caller.Cwd, done, redo)
	if len(done.done) > 0 && u.opts.Notify != nil {
		u.opts.Notify(req.Caller.SessionID, "The user ran /undo, which put files back as they were before some of your changes (read a file again before you change it):\n"+text)
	}
	switch {
	case len(inverse) == 0:
	case redo && kept:
		text += "\nThat /undo is taken back; /undo again undoes the change once more."
	case kept:
		text += "\n/undo right away puts this back."
	}
	if len(recs) < n && !redo {
		text += fmt.Sprintf("\n(Only %s could be undone: no older change is kept.)", plural(len(recs), "change"))
	}
	res := tools.Result{Text: text, Failed: len(inverse) == 0 || len(p.notRestored(done)) > 0}
	res.Changes, res.Locations = bashtool.ShowChanges(p.shown(done))
	return res
}

// usage answers an /undo whose count is not one.
var usage = fmt.Sprintf("Usage: /undo [N]: undoes the last change of this session, or the last N (a whole number from 1 to %d), newest first.", maxCount)

// count reads the text after /undo; false when it is no count.
func count(arg string) (int, bool) {
	if arg == "" {
		return 1, true
	}
	n, err := strconv.Atoi(strings.Fields(arg)[0])
	if err != nil || n < 1 || n > maxCount {
		return 0, false
	}
	return n, true
}

// title names the /undo's tool call: what it takes back.
func title(recs []tools.ChangeRecord, redo bool) string {
	switch {
	case redo:
		return "Put back what /undo undid"
	case len(recs) == 1:
		return "Undo " + oneLine(recs[0].Title)
	}
	return fmt.Sprintf("Undo the last %d changes", len(recs))
}

// oneLine is a title on one line, at most 80 characters.
func oneLine(s string) string {
	s, _, cut := strings.Cut(s, "\n")
	if utf8.RuneCountInString(s) > 80 {
		s, cut = string([]rune(s)[:80]), true
	}
	if cut {
		s += "…"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func failed(text string) tools.Result { return tools.Result{Text: text, Failed: true} }

// refusal says why the undo could not start.
func refusal(err error, ap agent.Approval) string {
	if err != nil {
		return err.Error()
	}
	return strings.TrimPrefix(ap.Message, "Error: ")
}

// confirm asks the user whether to overwrite the files changed since; an
// error says why not (rejected, or no one to ask).
func confirm(ctx context.Context, req agent.UndoRequest, call agent.CallInfo, p *undoPlan, changed []string) error {
	names := make([]string, len(changed))
	for i, path := range changed {
		names[i] = shownPath(req.Caller.Cwd, path)
	}
	what := strings.Join(names, ", ")
	unattended := fmt.Errorf("%s changed since, and no one could be asked whether to overwrite it", what)
	if req.Approver == nil {
		return unattended
	}
	verb := "was"
	if len(changed) > 1 {
		verb = "were"
	}
	ask := call
	ask.Call = tools.Call{
		Title:       fmt.Sprintf("/undo would overwrite %s, which %s changed since: undo anyway?", what, verb),
		Description: "Someone (you in the editor, or another program) changed these files after the change /undo takes back. Allow puts back their earlier text; Reject changes nothing.",
		Kind:        tools.KindEdit,
		Subject:     tools.Subject{Kind: tools.Confirm},
		Preview:     func(context.Context) []tools.Change { cs, _ := bashtool.ShowChanges(p.shown(nil)); return cs },
	}
	ap, err := req.Approver.Approve(ctx, ask)
	switch {
	case err != nil:
		return err
	case ap.Unattended:
		return unattended
	case !ap.Allowed:
		return fmt.Errorf("you chose not to overwrite %s, which %s changed since", what, verb)
	}
	return nil
}

// measure starts measuring the session's directory around the undo's
// writes; nil without a tracker or a directory.
func (u *Undoer) measure(caller tools.Caller) *changes.Mark {
	if u.opts.Changes == nil || caller.Cwd == "" {
		return nil
	}
	return u.opts.Changes.Begin(changes.Key{Session: caller.SessionID, Root: caller.Cwd})
}

// shownPath names path relative to cwd when inside it.
func shownPath(cwd, path string) string {
	if cwd != "" {
		if rel, err := filepath.Rel(cwd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return path
}

// state is a file as it is now, or will be after the steps before.
type state struct {
	exists bool
	size   int64
	// text is its content when read and text of at most MaxTextSize
	// bytes; sum its digest when read (text or not).
	text    *string
	sum     string
	notKept string
	// err: the file could not be looked at.
	err error
}

// step is one file to put back.
type step struct {
	path string
	// to is what it is put back to: existed with text before.
	existed bool
	before  string
	// since: the file is not what the call left.
	since bool
}

// skip is a file that cannot be put back, and why.
type skip struct {
	path, why string
}

// undoPlan is an /undo worked out before anything is touched.
type undoPlan struct {
	steps   []step
	skipped []skip
	// first is each path's state before the undo (for its inverse and
	// its diff), in the order met.
	first map[string]state
	order []string
	// last is each path's state once every step is made.
	last map[string]state
}

// plan works out, newest record first, what each file is put back to and
// whether it is what the call left (reading each file once).
func plan(x executor.Files, recs []tools.ChangeRecord) *undoPlan {
	p := &undoPlan{first: map[string]state{}, last: map[string]state{}}
	for _, r := range recs {
		for _, f := range r.Files {
			cur, ok := p.last[f.Path]
			if !ok {
				cur, ok = p.first[f.Path]
			}
			if !ok {
				cur = look(x, f.Path)
				p.first[f.Path] = cur
				p.order = append(p.order, f.Path)
			}
			switch {
			case cur.err != nil:
				p.skipped = append(p.skipped, skip{f.Path, fmt.Sprintf("could not be read: %v", cur.err)})
				continue
			case f.Existed && f.Before == nil:
				why := f.NotKept
				if why == "" {
					why = "its text was not kept"
				}
				p.skipped = append(p.skipped, skip{f.Path, why})
				continue
			}
			s := step{path: f.Path, existed: f.Existed, since: !leftAsIs(f, cur)}
			next := state{}
			if f.Existed {
				s.before = *f.Before
				t := s.before
				next = state{exists: true, size: int64(len(t)), text: &t, sum: bashtool.TextSum(t)}
			}
			p.steps = append(p.steps, s)
			p.last[f.Path] = next
		}
	}
	return p
}

// leftAsIs reports whether cur is what the call left of f.
func leftAsIs(f tools.FileChange, cur state) bool {
	if !f.Exists {
		return !cur.exists
	}
	return cur.exists && cur.size == f.AfterSize && (f.AfterSum == "" || f.AfterSum == cur.sum)
}

// look reads a file as it is now.
func look(x executor.Files, path string) state {
	fi, err := x.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state{}
	case err != nil:
		return state{err: err}
	case !fi.Mode().IsRegular():
		return state{err: fmt.Errorf("it is not a regular file now")}
	}
	data, err := x.ReadFile(path, maxRead)
	switch {
	case errors.Is(err, executor.ErrTooLarge):
		return state{exists: true, size: fi.Size(), notKept: fmt.Sprintf("larger than %d MiB", maxRead>>20)}
	case err != nil:
		return state{err: err}
	}
	s := state{exists: true, size: int64(len(data)), sum: bashtool.TextSum(string(data))}
	switch {
	case !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0:
		s.notKept = "binary file"
	case len(data) > changes.MaxTextSize:
		s.notKept = fmt.Sprintf("larger than %d KiB", changes.MaxTextSize>>10)
	default:
		t := string(data)
		s.text = &t
	}
	return s
}

// changedSince lists, once each, the files to put back that are not what
// their call left.
func (p *undoPlan) changedSince() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.steps {
		if s.since && !seen[s.path] {
			seen[s.path] = true
			out = append(out, s.path)
		}
	}
	return out
}

// outcome is what apply did: the paths put back, and those that failed.
type outcome struct {
	done   map[string]bool
	failed []skip
}

// apply makes the steps, in order; a step on a path that failed already
// is not made (the older text would land on the wrong version).
func (p *undoPlan) apply(x executor.Files) *outcome {
	o := &outcome{done: map[string]bool{}}
	bad := map[string]bool{}
	for _, s := range p.steps {
		if bad[s.path] {
			continue
		}
		var err error
		if s.existed {
			err = x.WriteFile(s.path, []byte(s.before))
		} else {
			err = x.Remove(s.path)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			bad[s.path] = true
			delete(o.done, s.path)
			o.failed = append(o.failed, skip{s.path, err.Error()})
			continue
		}
		o.done[s.path] = true
	}
	return o
}

// inverse is the record of the undo: for each file put back, what it was
// before and what the undo left, so that an /undo of it puts it back.
func (p *undoPlan) inverse(o *outcome) []tools.FileChange {
	var out []tools.FileChange
	for _, path := range p.order {
		if !o.done[path] {
			continue
		}
		was, now := p.first[path], p.last[path]
		f := tools.FileChange{Path: path, Existed: was.exists, Exists: now.exists, Before: was.text, AfterSize: now.size, AfterSum: now.sum}
		if was.exists && was.text == nil {
			f.NotKept = was.notKept
		}
		out = append(out, f)
	}
	return out
}

// shown is the restoring change of each file put back (o nil: of each to
// put back), as a call's changes are shown.
func (p *undoPlan) shown(o *outcome) []changes.Change {
	var out []changes.Change
	for _, path := range p.order {
		now, planned := p.last[path]
		if !planned || (o != nil && !o.done[path]) {
			continue
		}
		was := p.first[path]
		c := changes.Change{Path: path, Op: changes.Modified, Old: side(was), New: side(now)}
		switch {
		case !was.exists && !now.exists:
			continue
		case !was.exists:
			c.Op = changes.Created
		case !now.exists:
			c.Op = changes.Deleted
		}
		out = append(out, c)
	}
	return out
}

func side(s state) changes.Side {
	if !s.exists {
		return changes.Side{}
	}
	out := changes.Side{Size: s.size, Binary: s.notKept == "binary file"}
	if s.text != nil {
		out.Text, out.Known = *s.text, true
	}
	return out
}

// report says what was put back (o nil: nothing was) and what could not
// be, and why.
func (p *undoPlan) report(cwd string, o *outcome, redo bool) string {
	var b strings.Builder
	if o != nil {
		var restored []string
		for _, path := range p.order {
			if o.done[path] {
				restored = append(restored, "- "+shownPath(cwd, path)+" "+what(p.first[path], p.last[path], redo))
			}
		}
		if len(restored) > 0 {
			b.WriteString("Restored:\n" + strings.Join(restored, "\n"))
		}
	}
	not := p.notRestored(o)
	if len(not) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Not restored:")
		for _, s := range not {
			b.WriteString("\n- " + shownPath(cwd, s.path) + ": " + s.why)
		}
	}
	return b.String()
}

// notRestored are the files not put back, with why: those skipped (but
// one an older change's step put back after all: /undo 2 removes a file
// the first call made, whatever the second did to it) and those whose
// step failed.
func (p *undoPlan) notRestored(o *outcome) []skip {
	var out []skip
	for _, s := range p.skipped {
		if o == nil || !o.done[s.path] {
			out = append(out, s)
		}
	}
	if o != nil {
		out = append(out, o.failed...)
	}
	return out
}

// what says how a file was put back (redo: as the change had left it).
func what(was, now state, redo bool) string {
	switch {
	case was.exists && !now.exists:
		return "(removed)"
	case !was.exists:
		return "(made again)"
	case redo:
		return "(its text after the change put back)"
	}
	return "(its text before the change put back)"
}
