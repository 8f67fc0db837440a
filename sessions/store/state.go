package store

import (
	"maps"
	"slices"
)

// State is what a session's entries say about its settings, folded in
// order: the part of a session that is not its conversation.
type State struct {
	// Cwd is the header's cwd, or the last Cwd entry's.
	Cwd string
	// Roots are the last Roots entry's: the extra project roots.
	Roots []string
	Title string
	// Mode is the last Mode entry's; empty if none.
	Mode string
	// Config holds the last value of each config option set; nil if none.
	Config map[string]string
	// AlwaysAllow are the remembered keys, in the order first given, once each.
	AlwaysAllow []string
	// PendingNotices are the notices queued and not yet delivered, in order.
	PendingNotices []Notice
	// RunningTasks are the tasks started and not ended, in order started:
	// those running when the process that wrote the log stopped. A loader
	// that tells the model they are gone should append a TaskEnded for each,
	// so the next load does not say it again.
	RunningTasks []string
	// Usage is the last Usage entry's; nil if none.
	Usage *Usage
	// Compaction is the last compaction; nil if none. The model's history
	// is its Summary, then the entries from its KeptFromSeq on.
	Compaction *Compaction
}

// Fold computes a session's State from its header and entries. Entries
// that do not decode are ignored.
func Fold(h Header, entries []Entry) State {
	f := newFolder(h)
	for _, e := range entries {
		f.add(e)
	}
	return f.state()
}

// folder folds entries into a State one at a time, so that a log can be
// folded as it streams, without holding its entries.
type folder struct {
	st      State
	allowed map[string]bool
	running map[string]bool
	// tasks are the tasks started, in order, once each.
	tasks []string
}

func newFolder(h Header) *folder {
	return &folder{st: State{Cwd: h.Cwd}, allowed: map[string]bool{}, running: map[string]bool{}}
}

func (f *folder) add(e Entry) {
	switch e.Kind {
	case KindPrompt, KindAssistant, KindToolResult, KindPlan, KindNoticed, KindChanges:
		// The conversation (and the undo journal) says nothing of the state: not decoded (most of
		// a log's bytes are here).
		return
	}
	p, err := e.Decode()
	if err != nil {
		return
	}
	st := &f.st
	switch v := p.(type) {
	case Cwd:
		if v.Cwd != "" {
			st.Cwd = v.Cwd
		}
	case Roots:
		st.Roots = slices.Clone(v.Roots)
	case Title:
		st.Title = v.Title
	case Mode:
		st.Mode = v.Mode
	case Config:
		if st.Config == nil {
			st.Config = map[string]string{}
		}
		st.Config[v.OptionID] = v.Value
	case AlwaysAllow:
		f.allow(v.Key)
	case Notice:
		f.notice(v)
	case TaskStarted:
		f.started(v.ID)
	case TaskEnded:
		delete(f.running, v.ID)
	case Usage:
		st.Usage = &v
	case Compaction:
		st.Compaction = &v
	}
}

// allow keeps the remembered keys in the order first given, once each.
func (f *folder) allow(key string) {
	if !f.allowed[key] {
		f.allowed[key] = true
		f.st.AlwaysAllow = append(f.st.AlwaysAllow, key)
	}
}

// started keeps the tasks started in order, once each.
func (f *folder) started(id string) {
	if !f.running[id] {
		f.running[id] = true
		f.tasks = append(f.tasks, id)
	}
}

// notice keeps the pending notices: queued ones in order, less those
// delivered since.
func (f *folder) notice(v Notice) {
	switch v.State {
	case NoticeQueued:
		f.st.PendingNotices = append(f.st.PendingNotices, v)
	case NoticeDelivered:
		for i, n := range f.st.PendingNotices {
			if n.ID == v.ID {
				f.st.PendingNotices = append(f.st.PendingNotices[:i:i], f.st.PendingNotices[i+1:]...)
				break
			}
		}
	}
}

// state is the State folded so far; the caller may keep and change it.
func (f *folder) state() State {
	st := f.st
	st.Config = maps.Clone(st.Config)
	st.AlwaysAllow = slices.Clone(st.AlwaysAllow)
	st.Roots = slices.Clone(st.Roots)
	st.PendingNotices = slices.Clone(st.PendingNotices)
	if st.Usage != nil {
		u := *st.Usage
		st.Usage = &u
	}
	if st.Compaction != nil {
		c := *st.Compaction
		st.Compaction = &c
	}
	for _, id := range f.tasks {
		if f.running[id] {
			st.RunningTasks = append(st.RunningTasks, id)
		}
	}
	return st
}
