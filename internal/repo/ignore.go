package repo

import (
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// MaxIgnoreFile bounds what is read of one ignore file or git config:
// git's own are kilobytes.
const MaxIgnoreFile = 1 << 20

// ReadPatterns reads one ignore file; a missing or unreadable one has none,
// and so has one that is not a regular file (a FIFO would block the walk,
// and every command's end with it, for ever; a link to /dev/zero would
// never end) or is over MaxIgnoreFile. domain is the file's directory in
// the repository (nil for the top).
func ReadPatterns(file string, domain []string) []gitignore.Pattern {
	data, err := untrusted.ReadWhole(file, 0, MaxIgnoreFile)
	if err != nil {
		return nil
	}
	return ParsePatterns(data, domain)
}

// ReadPatternsIn reads the repository's ignore file at rel below dir (see
// ReadPatterns) with no link on the way: a command writes the repository,
// and git itself follows no link to a .gitignore.
func ReadPatternsIn(dir, rel string, domain []string) []gitignore.Pattern {
	data, err := untrusted.ReadIn(dir, rel, untrusted.NoLinks, MaxIgnoreFile+1)
	if err != nil || len(data) > MaxIgnoreFile {
		return nil
	}
	return ParsePatterns(data, domain)
}

// ParsePatterns reads the lines of an ignore file of domain.
func ParsePatterns(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// Above are the ignore rules that apply to dir, a directory at or below
// the repository's top, from above it: the user's (global, read once by
// the caller with UserExcludes), the repository's ExcludeFile and each
// .gitignore from the top down to dir's parent. domain is dir's path in
// the repository (nil for the top).
func Above(top, dir string, global []gitignore.Pattern) (domain []string, ignore []gitignore.Pattern) {
	ignore = append([]gitignore.Pattern(nil), global...)
	ignore = append(ignore, ReadPatternsIn(top, ExcludeFile, nil)...)
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." {
		return nil, ignore
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := range parts {
		ignore = append(ignore, ReadPatternsIn(top, filepath.Join(filepath.Join(parts[:i]...), ".gitignore"), parts[:i:i])...)
	}
	return parts, ignore
}
