package changes

import (
	"path/filepath"
	"sort"
	"strings"
)

// BeginAll is Begin for each of a session's roots (its working directory,
// then its other project roots), measured as one: End returns what
// changed in any of them, sorted by path. A root inside another is
// measured with that one, not twice. One root is exactly Begin; nil when
// no root can be measured.
func (t *Tracker) BeginAll(session string, roots ...string) *Mark {
	roots = outermost(roots)
	if len(roots) == 1 {
		return t.Begin(Key{Session: session, Root: roots[0]})
	}
	m := &Mark{}
	for _, r := range roots {
		if x := t.Begin(Key{Session: session, Root: r}); x != nil {
			m.more = append(m.more, x)
		}
	}
	if len(m.more) == 0 {
		return nil
	}
	return m
}

// endAll is End of a Mark of several trees (BeginAll's).
func (m *Mark) endAll() []Change {
	var out []Change
	for _, x := range m.more {
		out = append(out, x.End()...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// outermost is roots, cleaned, in order, without the empty ones, those
// given twice and those inside another.
func outermost(roots []string) []string {
	var out []string
	for i, r := range roots {
		if r == "" {
			continue
		}
		r = filepath.Clean(r)
		inner := false
		for j, o := range roots {
			if o == "" || j == i {
				continue
			}
			o = filepath.Clean(o)
			if strictlyIn(r, o) || (r == o && j < i) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, r)
		}
	}
	return out
}

// strictlyIn reports whether path is strictly inside dir.
func strictlyIn(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
