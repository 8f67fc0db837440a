package sandbox

import (
	"path/filepath"
	"strings"
)

// seatbeltRead are trees macOS programs need when Policy.Read narrows
// reading, beyond SystemRead.
var seatbeltRead = []string{"/System", "/Library", "/private/etc", "/private/var/db", "/Applications"}

// seatbeltDevices are the device nodes a command may write on macOS.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/dtracehelper"}

// Profile is the Seatbelt (SBPL) profile for sandbox-exec that applies p,
// with the same meaning as the Landlock rules on Linux: writes only to the
// workdir, TempDir, Write and the devices; reads everywhere (or within
// Read); Deny unreadable and unwritable unless a more specific Read or
// Write entry re-opens part of it; no network unless p.Network. Paths
// should be real (symlinks resolved): Seatbelt matches the real path.
//
// In SBPL the last matching rule wins, so the order below is the logic.
func Profile(p Policy) string {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n")
	write := nonEmpty(append([]string{p.Workdir, p.TempDir}, p.Write...))
	deny := nonEmpty(p.Deny)

	if len(p.Read) > 0 {
		read := append(append(append(append([]string{}, p.Read...), SystemRead...), seatbeltRead...), filepath.Dir(p.Shell))
		b.WriteString("(deny file-read*)\n")
		// Resolving any path stats its parents.
		b.WriteString("(allow file-read-metadata)\n")
		rule(&b, "allow file-read*", append(read, write...), nil)
	}

	b.WriteString("(deny file-write*)\n")
	rule(&b, "allow file-write*", write, seatbeltDevices)
	b.WriteString("(allow file-write* (regex #\"^/dev/ttys[0-9]+$\") (regex #\"^/dev/fd/[0-9]+$\"))\n")

	if len(deny) > 0 {
		rule(&b, "deny file-read* file-write*", deny, nil)
		// Entries strictly inside a denied tree are the more specific rule.
		var reRead, reWrite []string
		for _, r := range p.Read {
			if insideAny(r, deny) {
				reRead = append(reRead, r)
			}
		}
		for _, w := range write {
			if insideAny(w, deny) {
				reWrite = append(reWrite, w)
			}
		}
		if len(reRead) > 0 {
			rule(&b, "allow file-read*", reRead, nil)
		}
		if len(reWrite) > 0 {
			rule(&b, "allow file-read* file-write*", reWrite, nil)
		}
	}

	if !p.Network {
		b.WriteString("(deny network*)\n")
	}
	return b.String()
}

// rule writes `(op (subpath t)... (literal f)...)`.
func rule(b *strings.Builder, op string, trees, files []string) {
	b.WriteString("(" + op)
	for _, t := range trees {
		b.WriteString(" (subpath " + sbplString(filepath.Clean(t)) + ")")
	}
	for _, f := range files {
		b.WriteString(" (literal " + sbplString(f) + ")")
	}
	b.WriteString(")\n")
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// insideAny reports whether path is strictly inside one of dirs.
func insideAny(path string, dirs []string) bool {
	path = filepath.Clean(path)
	for _, d := range dirs {
		if within(path, filepath.Clean(d)) {
			return true
		}
	}
	return false
}
