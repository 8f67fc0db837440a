package executor

import (
	"cmp"
	"slices"
)

// List describes the background tasks owner started, oldest first, without
// consuming their output.
func (l *Local) List(owner string) []TaskInfo {
	l.mu.Lock()
	var ts []*task
	for _, t := range l.tasks {
		if t.owner == owner {
			ts = append(ts, t)
		}
	}
	l.mu.Unlock()
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.info())
	}
	slices.SortFunc(out, func(a, b TaskInfo) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}
