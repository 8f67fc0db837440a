package permission

import "strings"

// CheckKey applies the rules to a call approved by a tool key rather than a
// shell line, e.g. "mcp:<server>/<tool>": deny rules veto, then allow rules
// and remembered keys pass, else it is asked. A pattern applies to a key
// only when it names the key's scheme (the text up to the first ':'), so a
// shell pattern never passes or vetoes a tool: "mcp:github/search" matches
// that key alone, "mcp:github/*" every key that starts with "mcp:github/".
func (r Rules) CheckKey(key string, remembered map[string]bool) Decision {
	scheme, _, ok := strings.Cut(key, ":")
	if !ok || scheme == "" {
		return Decision{Verdict: Ask}
	}
	for _, p := range r.Deny {
		if keyMatches(p, scheme, key) {
			return Decision{Verdict: Deny, Rule: p}
		}
	}
	for _, p := range r.Allow {
		if keyMatches(p, scheme, key) {
			return Decision{Verdict: Allow, Rule: p}
		}
	}
	if remembered[key] {
		return Decision{Verdict: Allow, Rule: key}
	}
	return Decision{Verdict: Ask}
}

func keyMatches(pattern, scheme, key string) bool {
	pattern = strings.TrimSpace(pattern)
	if !strings.HasPrefix(pattern, scheme+":") {
		return false
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return key == pattern
}

// File tools' keys: "read:<path>" for a read or a search of path, "edit:<path>"
// for a write. Rules name them as they name tool keys ("edit:/repo/secrets/*"),
// and "always" answers about them are remembered as such patterns too.
const (
	ReadScheme = "read"
	EditScheme = "edit"
)

// FileKey is the key of a file tool's call on path (absolute).
func FileKey(scheme, path string) string { return scheme + ":" + path }

// FilePattern is the pattern an "always" answer about the files in dir
// remembers: every path below it.
func FilePattern(scheme, dir string) string {
	return scheme + ":" + strings.TrimSuffix(dir, "/") + "/*"
}

// CheckFile applies the rules to a file tool's call on path: deny rules
// veto, allow rules pass (both as for CheckKey), then a remembered key that
// is a pattern of the same scheme (see FilePattern) passes the paths it
// matches.
func (r Rules) CheckFile(scheme, path string, remembered map[string]bool) Decision {
	key := FileKey(scheme, path)
	if d := r.CheckKey(key, nil); d.Verdict != Ask {
		return d
	}
	for k := range remembered {
		// "dir/*" covers dir itself too (a search of it).
		if keyMatches(k, scheme, key) || keyMatches(k, scheme, key+"/") {
			return Decision{Verdict: Allow, Rule: k}
		}
	}
	return Decision{Verdict: Ask}
}
