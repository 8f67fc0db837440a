// Package instructions reads what a session's model is told of its
// project: the user's own AGENTS.md, then AGENTS.md (or CLAUDE.md) of each
// directory from the repository's top down to the session's directory,
// within agent.MaxInstructions, with the repository's branch. It reads
// below the protocol layer and above the model loop, which is given the
// text (agent.InstructionSet); every file through internal/untrusted, the
// repository's through internal/repo.
package instructions

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/repo"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// Instruction file names: AGENTS.md, else CLAUDE.md standing in for it.
const (
	AgentsFile = "AGENTS.md"
	ClaudeFile = "CLAUDE.md"
)

// statKey is what decides whether a file is read again.
type statKey struct {
	size int64
	mod  time.Time
}

type cachedFile struct {
	key  statKey
	text string
}

// Reader reads a session's instruction files before each prompt. It
// reads a file again only when its size or mtime changed, and says when the
// editor should be shown the list: the first time, and after a change. One
// per session; safe for concurrent use.
type Reader struct {
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
func (in *Reader) Load(cwd, userFile string) (set agent.InstructionSet, read *agent.InstructionsRead) {
	return in.LoadRoots(cwd, nil, userFile)
}

// LoadRoots is Load for a session with other project roots beside cwd:
// each root's files (from its repository's root down to it, each file
// once) come after the user's and before cwd's, which stay the most
// specific. Root, Branch and Detached are cwd's.
func (in *Reader) LoadRoots(cwd string, roots []string, userFile string) (set agent.InstructionSet, read *agent.InstructionsRead) {
	in.mu.Lock()
	defer in.mu.Unlock()
	set, stats := in.load(cwd, roots, userFile)
	return set, in.toShow(set, stats)
}

// Read reads the instruction files as Load does, for a turn that shows the
// editor nothing of them (a slash command): what the editor was shown is
// left as it was.
func (in *Reader) Read(cwd, userFile string) agent.InstructionSet {
	return in.ReadRoots(cwd, nil, userFile)
}

// ReadRoots is Read for a session with other project roots (LoadRoots).
func (in *Reader) ReadRoots(cwd string, roots []string, userFile string) agent.InstructionSet {
	in.mu.Lock()
	defer in.mu.Unlock()
	set, _ := in.load(cwd, roots, userFile)
	return set
}

func (in *Reader) load(cwd string, roots []string, userFile string) (set agent.InstructionSet, stats map[string]statKey) {
	if in.cache == nil {
		in.cache = map[string]cachedFile{}
	}
	set.Root = repo.Top(cwd)
	set.Branch, set.Detached = repo.Head(set.Root)

	stats = map[string]statKey{}
	var files []agent.InstructionFile
	add := func(path, bound string) bool {
		if _, seen := stats[path]; seen {
			return true
		}
		text, key, ok := in.read(path, path == userFile, bound)
		if ok {
			stats[path] = key
			files = append(files, agent.InstructionFile{Path: path, Text: text})
		}
		return ok
	}
	if userFile != "" {
		add(userFile, "")
	}
	// A directory's chain is read below its repository's root (or itself
	// outside one): links are followed only while they stay there.
	addChain := func(dir, top string) {
		bound := top
		if bound == "" {
			bound = dir
		}
		for _, d := range chain(dir, top) {
			// CLAUDE.md stands in only where a directory has no AGENTS.md.
			if !add(filepath.Join(d, AgentsFile), bound) {
				add(filepath.Join(d, ClaudeFile), bound)
			}
		}
	}
	for _, r := range roots {
		addChain(r, repo.Top(r))
	}
	addChain(cwd, set.Root)
	set.Files, set.Cut = cut(files, agent.MaxInstructions)
	return set, stats
}

// read returns a file's text, from the cache when its size and mtime are
// those cached. A project's file (not the user's own) is opened below
// bound, links followed only while they stay in it: a cloned repository's
// AGENTS.md linking to ~/.aws/credentials, or a command renaming such a
// link over AGENTS.md again and again, would put that file in the system
// prompt, sent to the endpoint with no question asked. The size and mtime
// are those of the file opened (fstat), never of a second lookup by name.
func (in *Reader) read(path string, user bool, bound string) (string, statKey, bool) {
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
	// Past agent.MaxInstructions a file is cut anyway (see cut): a huge one
	// costs no more than that.
	b, err := io.ReadAll(io.LimitReader(f, agent.MaxInstructions+utf8.UTFMax))
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
func (in *Reader) toShow(set agent.InstructionSet, stats map[string]statKey) *agent.InstructionsRead {
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
	r := &agent.InstructionsRead{Cut: set.Cut}
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
func cut(files []agent.InstructionFile, max int) (kept []agent.InstructionFile, dropped []string) {
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
