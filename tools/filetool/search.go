package filetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools"
)

// What one search returns at most.
const (
	maxGlobFiles  = 1000
	maxGrepLines  = 250
	maxMatchBytes = 500
	// maxGrepFile: a larger file is not searched.
	maxGrepFile = 16 << 20
	// maxLocations: the editor may follow this many files of a search.
	maxLocations = 20
)

type globTool struct{ *base }

func (*globTool) Name() string { return NameGlob }

func (*globTool) Description() string {
	return "List files (not directories) whose path matches a glob pattern such as **/*.go or src/**/test_*.py, newest first, at most 1000. path is the directory searched (default: the session's). Skips .git and git-ignored files."
}

func (*globTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`)
}

type grepTool struct{ *base }

func (*grepTool) Name() string { return NameGrep }

func (*grepTool) Description() string {
	return "Search file contents with a regular expression (Go RE2 syntax). Returns matching lines with line numbers, grouped by file, at most 250. path is a file or directory (default: the session's); include is a glob the file names must match (*.go, src/**/*.ts). Skips binary files, .git and git-ignored files."
}

func (*grepTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"include":{"type":"string"}},"required":["pattern"]}`)
}

// SearchOutput is glob's and grep's raw output for the editor.
type SearchOutput struct {
	// Files is how many files matched; Lines how many lines (grep).
	Files int  `json:"files"`
	Lines int  `json:"lines,omitempty"`
	Error bool `json:"isError,omitempty"`
}

// searchRoot reads path (default: the session's directory).
func searchRoot(caller tools.Caller, obj tools.Args) (string, error) {
	p, err := obj.String("path", false)
	if err != nil {
		return "", err
	}
	if p == "" {
		if caller.Cwd == "" {
			return "", tools.ArgError("the session has no directory: give path")
		}
		return caller.Cwd, nil
	}
	return absPath(caller, p)
}

func (t *globTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	root, pattern, err := globArgs(caller, raw)
	if err != nil {
		return failed("Find files", tools.KindSearch, err)
	}
	// The walk starts at the pattern's fixed directories.
	base, rest := doublestar.SplitPattern(pattern)
	start := root
	if base != "." {
		start = filepath.Join(root, filepath.FromSlash(base))
	}
	return tools.Prepared{
		Call: tools.Call{Title: fmt.Sprintf("Find %s in %s", pattern, shownPath(caller, root)), Kind: tools.KindSearch,
			Subject: readSubject(caller, root, root)},
		Run: func(ctx context.Context, _ tools.Live) tools.Result {
			f, err := t.open(ctx, caller)
			if err != nil {
				return searchError(caller, root, err)
			}
			var (
				all []globMatch
				mu  sync.Mutex
			)
			truncated, err := walkInfo(ctx, f.x, start, t.userExcludes, func(abs, rel string, d fs.DirEntry) error {
				if ok, _ := doublestar.Match(rest, rel); ok {
					mu.Lock()
					all = append(all, globMatch{abs: abs, d: d})
					mu.Unlock()
				}
				return nil
			})
			all = statMatches(f.x, all)
			if errors.Is(err, fs.ErrNotExist) && start != root {
				err = nil // the fixed part names no directory: nothing matches
			}
			if err != nil {
				return searchError(caller, start, err)
			}
			return globListing(caller, all, truncated, pattern, root)
		},
	}
}

// globArgs reads the call's arguments into the directory the search is
// rooted at and the pattern relative to it.
func globArgs(caller tools.Caller, raw json.RawMessage) (root, pattern string, err error) {
	obj, err := tools.ParseArgs(raw)
	if err == nil {
		pattern, err = obj.NonEmpty("pattern")
	}
	if err == nil {
		root, err = searchRoot(caller, obj)
	}
	if err != nil {
		return "", "", err
	}
	// An absolute pattern searches from its fixed part.
	if filepath.IsAbs(pattern) {
		base, rest := doublestar.SplitPattern(pattern)
		root, pattern = filepath.Clean(base), rest
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return "", "", tools.ArgError(fmt.Sprintf("invalid pattern %q", pattern))
	}
	return root, pattern, nil
}

type globMatch struct {
	abs   string
	d     fs.DirEntry
	mtime time.Time
	ok    bool
}

// statMatches gives each match its modification time and drops those that
// vanished or whose link dangles. The times, a stat each, are read a few at
// a time: most of a glob's cost.
func statMatches(x executor.Files, all []globMatch) []globMatch {
	var wg sync.WaitGroup
	workers := max(2, runtime.GOMAXPROCS(0))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(all); i += workers {
				m := &all[i]
				fi, err := m.d.Info()
				if err == nil && m.d.Type()&fs.ModeSymlink != 0 {
					fi, err = x.Stat(m.abs)
				}
				if err == nil {
					m.mtime, m.ok = fi.ModTime(), true
				}
			}
		}()
	}
	wg.Wait()
	kept := all[:0]
	for _, m := range all {
		if m.ok {
			kept = append(kept, m)
		}
	}
	return kept
}

// globListing is the result the model sees: newest first, capped.
func globListing(caller tools.Caller, all []globMatch, truncated bool, pattern, root string) tools.Result {
	sort.Slice(all, func(i, j int) bool {
		if !all[i].mtime.Equal(all[j].mtime) {
			return all[i].mtime.After(all[j].mtime)
		}
		return all[i].abs < all[j].abs
	})
	var b strings.Builder
	for i, m := range all {
		if i == maxGlobFiles {
			fmt.Fprintf(&b, "[… and %d more files not shown; narrow the pattern or path]\n", len(all)-i)
			break
		}
		b.WriteString(shownPath(caller, m.abs) + "\n")
	}
	if truncated {
		fmt.Fprintf(&b, "[search stopped after %d files; narrow the path]\n", maxWalk)
	}
	if len(all) == 0 && !truncated {
		b.WriteString(fmt.Sprintf("No files match %s in %s", pattern, shownPath(caller, root)))
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n"), Raw: SearchOutput{Files: len(all)}}
}

func searchError(caller tools.Caller, path string, err error) tools.Result {
	r := errorResult(opError(caller, path, err))
	r.Raw = SearchOutput{Error: true}
	return r
}

func (t *grepTool) Prepare(caller tools.Caller, raw json.RawMessage) tools.Prepared {
	obj, err := tools.ParseArgs(raw)
	var pattern, include, root string
	var re *regexp.Regexp
	if err == nil {
		pattern, err = obj.NonEmpty("pattern")
	}
	if err == nil {
		include, err = obj.String("include", false)
	}
	if err == nil {
		root, err = searchRoot(caller, obj)
	}
	if err == nil {
		if _, err = regexp.Compile(pattern); err != nil {
			err = tools.ArgError(fmt.Sprintf("invalid pattern: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: ")))
		} else {
			// Multi-line mode: ^ and $ are a line's ends, as grep's are.
			re = regexp.MustCompile("(?m)" + pattern)
		}
	}
	if err == nil && include != "" && !doublestar.ValidatePattern(include) {
		err = tools.ArgError(fmt.Sprintf("invalid include %q", include))
	}
	if err != nil {
		return failed("Search", tools.KindSearch, err)
	}
	return tools.Prepared{
		Call: tools.Call{Title: fmt.Sprintf("Search %s in %s", pattern, shownPath(caller, root)), Kind: tools.KindSearch,
			Subject: readSubject(caller, root, root)},
		Run: func(ctx context.Context, _ tools.Live) tools.Result {
			f, err := t.open(ctx, caller)
			if err != nil {
				return searchError(caller, root, err)
			}
			g := &grep{re: re, include: include, user: t.userExcludes, x: f.x, editor: f}
			hits, truncated, err := g.run(ctx, root)
			if err != nil {
				return searchError(caller, root, err)
			}
			return g.result(caller, pattern, root, hits, truncated)
		},
	}
}

// grep is one search.
type grep struct {
	re      *regexp.Regexp
	include string
	user    func() []gitignore.Pattern
	x       executor.Files
	editor  *files
}

// fileHits are one file's matching lines.
type fileHits struct {
	abs   string
	lines []hit
}

type hit struct {
	n    int
	text string
}

// run searches root (a file or a directory), a few files at a time.
func (g *grep) run(ctx context.Context, root string) ([]fileHits, bool, error) {
	fi, err := g.x.Stat(root)
	if err != nil {
		return nil, false, err
	}
	if !fi.IsDir() {
		h, err := g.file(root)
		if err != nil {
			return nil, false, err
		}
		if len(h.lines) == 0 {
			return nil, false, nil
		}
		return []fileHits{h}, false, nil
	}
	paths := make(chan string, 64)
	var (
		mu   sync.Mutex
		hits []fileHits
		wg   sync.WaitGroup
	)
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				h, err := g.file(p)
				if err != nil || len(h.lines) == 0 {
					continue // an unreadable file has no match
				}
				mu.Lock()
				hits = append(hits, h)
				mu.Unlock()
			}
		}()
	}
	truncated, err := walk(ctx, g.x, root, g.user, func(abs, rel string, _ fs.DirEntry) error {
		if g.include != "" && !g.includes(rel) {
			return nil
		}
		select {
		case paths <- abs:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(paths)
	wg.Wait()
	if err != nil {
		return nil, false, err
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].abs < hits[j].abs })
	return hits, truncated, nil
}

// includes reports whether a file's path (relative to the search) matches
// include: a pattern without a slash is matched against the name.
func (g *grep) includes(rel string) bool {
	name := rel
	if !strings.Contains(g.include, "/") {
		name = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	ok, _ := doublestar.Match(g.include, name)
	return ok
}

// file is one file's matching lines; a binary or too large file has none.
func (g *grep) file(path string) (fileHits, error) {
	data, err := g.x.ReadFile(path, maxGrepFile)
	if err != nil {
		if errors.Is(err, executor.ErrTooLarge) {
			err = nil
		}
		return fileHits{}, err
	}
	h := fileHits{abs: path}
	if !g.re.Match(data) || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
		return h, nil
	}
	if g.editor.viaEditor(path) {
		// An open buffer is what the user sees: search that.
		if text, err := g.editor.editor.ReadTextFile(context.Background(), path); err == nil {
			data = []byte(text)
		}
	}
	line, pos := 1, 0
	for pos < len(data) {
		loc := g.re.FindIndex(data[pos:])
		if loc == nil {
			break
		}
		start := pos + loc[0]
		line += bytes.Count(data[pos:start], []byte{'\n'})
		ls := bytes.LastIndexByte(data[:start], '\n') + 1
		le := bytes.IndexByte(data[start:], '\n')
		if le < 0 {
			le = len(data)
		} else {
			le += start
		}
		h.lines = append(h.lines, hit{n: line, text: cutLine(string(bytes.TrimSuffix(data[ls:le], []byte{'\r'})))})
		if le >= len(data) {
			break
		}
		pos = le + 1
		line++
	}
	return h, nil
}

// cutLine cuts a matching line past maxMatchBytes, with a mark.
func cutLine(s string) string {
	if len(s) <= maxMatchBytes {
		return s
	}
	end := maxMatchBytes
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + fmt.Sprintf("… [line cut: %d more bytes]", len(s)-end)
}

// result is the model's text: each file's path, then its lines.
func (g *grep) result(caller tools.Caller, pattern, root string, hits []fileHits, truncated bool) tools.Result {
	var b strings.Builder
	total, shownLines := 0, 0
	var locs []tools.Location
	for _, h := range hits {
		total += len(h.lines)
	}
	for _, h := range hits {
		if shownLines == maxGrepLines {
			break
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(shownPath(caller, h.abs) + "\n")
		for _, l := range h.lines {
			if shownLines == maxGrepLines {
				break
			}
			b.WriteString(strconv.Itoa(l.n) + ":" + l.text + "\n")
			shownLines++
		}
		if len(locs) < maxLocations {
			line := h.lines[0].n - 1
			locs = append(locs, tools.Location{Path: h.abs, Line: &line})
		}
	}
	if total > shownLines {
		fmt.Fprintf(&b, "[… and %d more matching lines not shown; narrow the pattern, path or include]\n", total-shownLines)
	}
	if truncated {
		fmt.Fprintf(&b, "[search stopped after %d files; narrow the path]\n", maxWalk)
	}
	if total == 0 && !truncated {
		b.WriteString(fmt.Sprintf("No matches for %s in %s", pattern, shownPath(caller, root)))
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n"), Raw: SearchOutput{Files: len(hits), Lines: total}, Locations: locs}
}
