package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the longest function name the chat-completions API accepts
// (^[a-zA-Z0-9_-]{1,64}$).
const maxNameLen = 64

// hashLen is how many hex digits of the (server, tool) hash end a name that
// had to be cut or that clashed.
const hashLen = 8

// nameKey is a tool as its server knows it.
type nameKey struct {
	Server string
	Tool   string
}

// sanitize replaces every byte the API does not accept with '_'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// toolNames gives each (server, tool) its model-facing name. The plain name
// is mcp__<server>__<tool> with every character outside [a-zA-Z0-9_-]
// replaced by '_'. A plain name longer than 64 bytes, or one that two tools
// share (e.g. servers "a b" and "a_b"), becomes its first 55 bytes, '_' and
// 8 hex digits of a SHA-256 of the original server and tool names: the
// result depends only on the set of tools, never on their order, and every
// tool that clashed is renamed, not only the second one.
func toolNames(keys []nameKey) []string {
	plain := make([]string, len(keys))
	count := make(map[string]int, len(keys))
	for i, k := range keys {
		plain[i] = "mcp__" + sanitize(k.Server) + "__" + sanitize(k.Tool)
		count[plain[i]]++
	}
	out := make([]string, len(keys))
	taken := make(map[string]bool, len(keys))
	for i, p := range plain {
		if len(p) <= maxNameLen && count[p] == 1 {
			out[i] = p
			taken[p] = true
		}
	}
	for i, k := range keys {
		if out[i] != "" {
			continue
		}
		// A second round (and a salt) only for the astronomically unlikely
		// case that a hashed name meets another name; the salt keeps it
		// deterministic.
		for salt := 0; ; salt++ {
			n := hashedName(plain[i], k, salt)
			if !taken[n] {
				out[i] = n
				taken[n] = true
				break
			}
		}
	}
	return out
}

func hashedName(plain string, k nameKey, salt int) string {
	h := sha256.New()
	h.Write([]byte(k.Server))
	h.Write([]byte{0})
	h.Write([]byte(k.Tool))
	for range salt {
		h.Write([]byte{0})
	}
	sum := hex.EncodeToString(h.Sum(nil))[:hashLen]
	head := plain[:min(len(plain), maxNameLen-hashLen-1)]
	return strings.TrimRight(head, "_") + "_" + sum
}
