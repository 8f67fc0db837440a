package agent

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// MaxInstructions bounds the project instructions put in the system prompt,
// in bytes, all files together: past it the farthest files are left out.
const MaxInstructions = 32 << 10

// Instruction file names: AGENTS.md, else CLAUDE.md standing in for it.
const (
	AgentsFile = "AGENTS.md"
	ClaudeFile = "CLAUDE.md"
)

// InstructionFile is one instructions file as read.
type InstructionFile struct {
	Path string
	Text string
	// Truncated: only the beginning of the file is in Text (it alone was
	// over MaxInstructions).
	Truncated bool
}

// InstructionSet is what a session's model is told of its project: its
// instruction files from the most general to the most specific, and where
// the project is.
type InstructionSet struct {
	// Files are in the order the model reads them: the user's file, the
	// repository root's, …, the cwd's.
	Files []InstructionFile
	// Cut names the files left out to stay within MaxInstructions, farthest
	// first.
	Cut []string
	// Root is the repository root (the nearest directory holding .git);
	// empty when the cwd is in none.
	Root string
	// Branch is the checked-out branch of Root ("" for none or a detached
	// HEAD, then Detached holds the commit's short hash).
	Branch   string
	Detached string
}

// InstructionsRead is what the editor is shown of the instruction files
// read for a turn.
type InstructionsRead struct {
	// Paths are the files the model reads, most general first.
	Paths []string
	// Changed are those read again because they changed since the editor
	// was last shown them (empty the first time).
	Changed []string
	// Cut names the files left out (MaxInstructions).
	Cut []string
}

// statKey is what decides whether a file is read again.
type statKey struct {
	size int64
	mod  time.Time
}

type cachedFile struct {
	key  statKey
	text string
}

// Instructions reads a session's instruction files before each prompt. It
// reads a file again only when its size or mtime changed, and says when the
// editor should be shown the list: the first time, and after a change. One
// per session; safe for concurrent use.
type Instructions struct {
	// mu guards cache and shown.
	mu    sync.Mutex
	cache map[string]cachedFile
	// shown is the stat of each file as the editor was last shown it; nil
	// until it was shown once.
	shown map[string]statKey
}

// Load reads the instruction files for cwd: the user's file (userFile,
// empty for none), then AGENTS.md (or CLAUDE.md) of each directory from the
// repository root down to cwd — or of cwd alone outside a repository. read
// is non-nil when the editor should be told which files were read.
// Unreadable files are skipped: instructions are a help, never a reason for
// a prompt to fail.
func (in *Instructions) Load(cwd, userFile string) (set InstructionSet, read *InstructionsRead) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cache == nil {
		in.cache = map[string]cachedFile{}
	}
	set.Root = changes.RepoTop(cwd)
	set.Branch, set.Detached = gitHead(set.Root)

	stats := map[string]statKey{}
	var files []InstructionFile
	bound := set.Root
	if bound == "" {
		bound = cwd
	}
	add := func(path string) bool {
		text, key, ok := in.read(path, path == userFile, bound)
		if ok {
			stats[path] = key
			files = append(files, InstructionFile{Path: path, Text: text})
		}
		return ok
	}
	if userFile != "" {
		add(userFile)
	}
	for _, dir := range chain(cwd, set.Root) {
		// CLAUDE.md stands in only where a directory has no AGENTS.md.
		if !add(filepath.Join(dir, AgentsFile)) {
			add(filepath.Join(dir, ClaudeFile))
		}
	}
	set.Files, set.Cut = cut(files, MaxInstructions)
	return set, in.toShow(set, stats)
}

// read returns a file's text, from the cache when its size and mtime are
// those cached. A project's file (not the user's own) is opened below
// bound, links followed only while they stay in it: a cloned repository's
// AGENTS.md linking to ~/.aws/credentials, or a command renaming such a
// link over AGENTS.md again and again, would put that file in the system
// prompt, sent to the endpoint with no question asked. The size and mtime
// are those of the file opened (fstat), never of a second lookup by name.
func (in *Instructions) read(path string, user bool, bound string) (string, statKey, bool) {
	f, err := openInstructions(path, user, bound)
	if err != nil {
		delete(in.cache, path)
		return "", statKey{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		delete(in.cache, path)
		return "", statKey{}, false
	}
	key := statKey{size: fi.Size(), mod: fi.ModTime()}
	if c, ok := in.cache[path]; ok && c.key == key {
		return c.text, key, true
	}
	// Past MaxInstructions a file is cut anyway (see cut): a huge one
	// costs no more than that.
	b, err := io.ReadAll(io.LimitReader(f, MaxInstructions+utf8.UTFMax))
	if err != nil {
		delete(in.cache, path)
		return "", statKey{}, false
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	in.cache[path] = cachedFile{key: key, text: text}
	return text, key, true
}

// openInstructions opens an instruction file as untrusted: a FIFO named
// AGENTS.md (a command in the project can make one) must not hang every
// prompt, nor a link to /dev/zero fill memory. The user's own file is
// theirs, links and all.
func openInstructions(path string, user bool, bound string) (*os.File, error) {
	if user {
		return untrusted.Open(path, os.O_RDONLY, 0)
	}
	rel, ok := untrusted.RelIn(bound, path)
	if !ok {
		return nil, &os.PathError{Op: "open", Path: path, Err: untrusted.ErrOutside}
	}
	return untrusted.OpenIn(bound, rel, untrusted.LinksWithin)
}

// toShow decides whether the editor is told about the files read: the first
// time there are any, and whenever one was added, removed or changed.
func (in *Instructions) toShow(set InstructionSet, stats map[string]statKey) *InstructionsRead {
	first := in.shown == nil
	var changed []string
	same := len(stats) == len(in.shown)
	for p, k := range stats {
		old, ok := in.shown[p]
		if !ok || old != k {
			same = false
			if !first {
				changed = append(changed, p)
			}
		}
	}
	if same && !first {
		return nil
	}
	if first && len(stats) == 0 {
		return nil
	}
	in.shown = stats
	r := &InstructionsRead{Cut: set.Cut}
	for _, f := range set.Files {
		r.Paths = append(r.Paths, f.Path)
	}
	// Changed in the model's order, for a stable display.
	for _, p := range append(append([]string(nil), set.Cut...), r.Paths...) {
		for _, c := range changed {
			if c == p {
				r.Changed = append(r.Changed, p)
			}
		}
	}
	return r
}

// cut keeps the nearest files within max bytes of text: the farthest go
// first, and a nearest file that alone is over max keeps its beginning.
func cut(files []InstructionFile, max int) (kept []InstructionFile, dropped []string) {
	total := 0
	start := len(files)
	for start > 0 && total+len(files[start-1].Text) <= max {
		start--
		total += len(files[start].Text)
	}
	if start == len(files) && len(files) > 0 {
		// The nearest file alone is too long.
		last := files[len(files)-1]
		t := last.Text[:max]
		// Not inside a character: back to the start of the last one.
		for i := len(t); i > 0 && i > len(t)-utf8.UTFMax; i-- {
			if utf8.RuneStart(t[i-1]) {
				if !utf8.FullRuneInString(t[i-1:]) {
					t = t[:i-1]
				}
				break
			}
		}
		last.Text, last.Truncated = t, true
		start = len(files) - 1
		files = append(files[:start:start], last)
	}
	for _, f := range files[:start] {
		dropped = append(dropped, f.Path)
	}
	return files[start:], dropped
}

// chain is the directories whose instruction files are read, most general
// first: root down to cwd, or cwd alone outside a repository.
func chain(cwd, root string) []string {
	if cwd == "" {
		return nil
	}
	cwd = filepath.Clean(cwd)
	if root == "" {
		return []string{cwd}
	}
	var dirs []string
	for d := cwd; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// maxGitFile bounds what is read of a .git file or a HEAD: a path or a ref.
const maxGitFile = 64 << 10

// gitHead reads the branch of the repository at root from its HEAD file,
// without running git: a prompt must not start a process the user would
// notice. A worktree's .git file names its real git directory.
func gitHead(root string) (branch, detached string) {
	if root == "" {
		return "", ""
	}
	// Read below root, no link out of it: a command can write .git and
	// HEAD, and 7 bytes of a file linked there would go to the endpoint
	// as a commit.
	b, err := untrusted.ReadIn(root, filepath.Join(".git", "HEAD"), untrusted.LinksWithin, maxGitFile)
	if errors.Is(err, syscall.ENOTDIR) {
		// A worktree's .git is a file: "gitdir: <path>".
		g, gerr := untrusted.ReadIn(root, ".git", untrusted.NoLinks, maxGitFile)
		if gerr != nil {
			return "", ""
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(g)), "gitdir:")
		if !ok {
			return "", ""
		}
		p = strings.TrimSpace(p)
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		b, err = untrusted.ReadIn(p, "HEAD", untrusted.NoLinks, maxGitFile)
	}
	if err != nil {
		return "", ""
	}
	head := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		return strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/"), ""
	}
	if len(head) >= 7 {
		return "", head[:7]
	}
	return "", ""
}
