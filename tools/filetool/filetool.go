// Package filetool implements the model-facing file tools read, write,
// edit, glob and grep: their schemas, argument checks, paths from the
// calling session, result text and, for the editor, diffs and locations.
// Every file operation goes through the executor (executor.Files), so a
// confined session's reads and writes get the sandbox's policy and the
// container's view of the files; where the session's files are the
// editor's and the client offers fs/read_text_file and fs/write_text_file
// (tools.Caller.Editor), reads and writes inside the session's directory
// go through the editor instead, so that its review sees every hunk and a
// read sees an unsaved buffer. It starts no process.
//
// Decisions the issue leaves open:
//   - Paths in results are relative to the session's directory when inside
//     it, absolute otherwise.
//   - glob and grep skip .git and what git ignores (the user's excludes,
//     .git/info/exclude, every .gitignore), as ripgrep does; bash (find,
//     grep -r) reaches the rest.
//   - Lines are numbered "<n>\t<line>" (cat -n without the padding).
package filetool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/dsh-acp/dsh-acp/changes"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/repo"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Tool names, in registration order.
const (
	NameRead  = "read"
	NameWrite = "write"
	NameEdit  = "edit"
	NameGlob  = "glob"
	NameGrep  = "grep"
)

// Executor is what the tools use of the executor: the file operations of a
// session, done where its commands run.
type Executor interface {
	Files(a executor.FileAccess) (executor.Files, error)
	// FilesAreHosts: the operations see this machine's files, which an
	// editor on it sees too.
	FilesAreHosts() bool
}

// Options configures the tools.
type Options struct {
	// Executor does every file operation. Required.
	Executor Executor
	// Changes records what write and edit change, as it records a
	// command's changes (the diffs, what a later command does not report
	// again, what undo takes back); nil means the tools' own diffs alone.
	Changes *changes.Tracker
	// Home and XDGConfigHome find the user's own git excludes
	// (core.excludesFile in Home/.gitconfig, else
	// $XDG_CONFIG_HOME/git/ignore, XDGConfigHome empty meaning
	// Home/.config), which glob and grep skip inside a repository as git
	// does. Empty Home: none.
	Home, XDGConfigHome string
}

// Tools returns read, write, edit, glob and grep over one executor.
func Tools(opts Options) ([]tools.Tool, error) {
	if opts.Executor == nil {
		return nil, errors.New("filetool: nil executor")
	}
	b := &base{ex: opts.Executor, tracker: opts.Changes, home: opts.Home, xdg: opts.XDGConfigHome}
	return []tools.Tool{&readTool{b}, &writeTool{b}, &editTool{b}, &globTool{b}, &grepTool{b}}, nil
}

// base is what every tool shares.
type base struct {
	ex        Executor
	tracker   *changes.Tracker
	home, xdg string
}

// userExcludes are the user's git excludes, read at each search that is in
// a repository (an edit of them applies at the next search): they are the
// user's own settings, read here on the agent's side as the change
// tracker reads them, whichever executor does the walk.
func (b *base) userExcludes() []gitignore.Pattern {
	return repo.UserExcludes(b.home, b.xdg)
}

// errorResult is an error result the model reads as "Error: <msg>".
func errorResult(msg string) tools.Result {
	return tools.Result{Text: "Error: " + msg, IsError: true, Raw: tools.ErrorOutput{IsError: true}}
}

// failed answers a call whose arguments did not validate.
func failed(title string, kind tools.Kind, err error) tools.Prepared {
	return tools.Prepared{
		Call: tools.Call{Title: title, Kind: kind},
		Run:  func(context.Context, tools.Live) tools.Result { return errorResult(err.Error()) },
	}
}

// absPath is p from the caller's directory: relative paths are joined to
// it, absolute ones kept; both cleaned. A relative path with no directory
// to resolve it is an error.
func absPath(caller tools.Caller, p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", tools.ArgError("invalid path: it contains a NUL byte")
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	if caller.Cwd == "" {
		return "", tools.ArgError(fmt.Sprintf("path %q is relative and the session has no directory", p))
	}
	return filepath.Join(caller.Cwd, p), nil
}

// inside reports whether path, its links resolved, is in the session's
// directory or one of its other roots.
func inside(caller tools.Caller, path string) bool {
	return rootOf(caller, path) != ""
}

// rootOf is the session's root that path, its links resolved, is in (the
// directory itself or inside it): its cwd, else the first of its other
// roots; "" for none.
func rootOf(caller tools.Caller, path string) string {
	if caller.Cwd == "" {
		return ""
	}
	p := executor.ResolvePath(path)
	for _, r := range append([]string{caller.Cwd}, caller.Roots...) {
		root := executor.ResolvePath(r)
		if p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/") {
			return r
		}
	}
	return ""
}

// shownPath is how a result names path: relative to the session's
// directory when inside it, else absolute.
func shownPath(caller tools.Caller, path string) string {
	if caller.Cwd != "" {
		if rel, err := filepath.Rel(caller.Cwd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return path
}

// readSubject is the approval subject of a read or search of path.
func readSubject(caller tools.Caller, path, dir string) tools.Subject {
	root := rootOf(caller, path)
	return tools.Subject{Kind: tools.FileRead, Text: path, Inside: root != "", Root: root, Dir: dir}
}

// writeSubject is the approval subject of a write of path.
func writeSubject(caller tools.Caller, path string) tools.Subject {
	root := rootOf(caller, path)
	return tools.Subject{Kind: tools.FileWrite, Text: path, Inside: root != "", Root: root}
}

// files are one call's file operations: the executor's, and the editor's
// for text inside the session's directory when they are the same files.
type files struct {
	x      executor.Files
	editor tools.EditorFiles
	caller tools.Caller
}

// open gets the call's file operations; a sandboxed call (the approval
// said so) gets the sandbox's.
func (b *base) open(ctx context.Context, caller tools.Caller) (*files, error) {
	x, err := b.ex.Files(executor.FileAccess{Owner: caller.SessionID, Root: caller.Cwd, Roots: caller.Roots, Sandboxed: tools.Sandboxed(ctx)})
	if err != nil {
		return nil, err
	}
	f := &files{x: x, caller: caller}
	if caller.Editor != nil && b.ex.FilesAreHosts() {
		f.editor = caller.Editor
	}
	return f, nil
}

// viaEditor reports whether path's text goes through the editor.
func (f *files) viaEditor(path string) bool {
	return f.editor != nil && inside(f.caller, path)
}

// maxFile is the largest file read, write and edit take whole.
const maxFile = 16 << 20

// text is a text file's content: the editor's buffer where it goes through
// the editor, else the file's. A file that is not UTF-8 text, or too large,
// is an error the model reads.
func (f *files) text(ctx context.Context, path string) (string, error) {
	data, err := f.x.ReadFile(path, maxFile)
	if err != nil {
		return "", err
	}
	if binary(data) {
		return "", tools.ArgError(fmt.Sprintf("%s is a binary file (%d bytes); these tools read and change text files only", shownPath(f.caller, path), len(data)))
	}
	if !f.viaEditor(path) {
		return string(data), nil
	}
	s, err := f.editor.ReadTextFile(ctx, path)
	if err != nil {
		return "", fmt.Errorf("the editor could not read %s: %w", shownPath(f.caller, path), err)
	}
	return s, nil
}

// write writes text to path, through the editor where it goes through it.
func (f *files) write(ctx context.Context, path, text string) error {
	if !f.viaEditor(path) {
		return f.x.WriteFile(path, []byte(text))
	}
	if err := f.editor.WriteTextFile(ctx, path, text); err != nil {
		return fmt.Errorf("the editor could not write %s: %w", shownPath(f.caller, path), err)
	}
	return nil
}

// binary reports whether data is not UTF-8 text: a NUL byte, or invalid
// UTF-8, in its first 8 KiB (a rune cut at that boundary is fine).
func binary(data []byte) bool {
	head := data[:min(len(data), 8<<10)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if utf8.Valid(head) {
		return false
	}
	if len(head) < len(data) {
		for cut := 1; cut <= 3 && cut < len(head); cut++ {
			if utf8.Valid(head[:len(head)-cut]) {
				return false
			}
		}
	}
	return true
}

// opError is the model's text for a failed file operation on path.
func opError(caller tools.Caller, path string, err error) string {
	var ae tools.ArgError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	name := shownPath(caller, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", name)
	case executor.ErrIsDir(err):
		return fmt.Sprintf("%s is a directory; glob lists its files", name)
	case errors.Is(err, executor.ErrTooLarge):
		return fmt.Sprintf("%s is larger than %d MiB; use bash (head, tail, sed -n) for part of it", name, maxFile>>20)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s: permission denied", name)
	case errors.Is(err, executor.ErrNoFiles):
		return "the file tools cannot reach this session's files with this executor; use bash"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: cannot %s: %v", name, pe.Op, pe.Err)
	}
	return err.Error()
}
