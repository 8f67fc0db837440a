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
