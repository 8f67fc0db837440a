// Package repo is what a git repository is to dsh-acp, read from its files
// without running git (a prompt must not start a process the user would
// notice): its top, its checked-out branch, its ignore rules and the
// user's git config. It is the one reader of those files: the change
// tracker and the instructions reader use it. A command of the session can
// write every file of the repository, so each is read as untrusted
// (internal/untrusted): no FIFO waited on, no link followed out, a bound on
// what is read.
package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// ExcludeFile is the repository's own ignore file, below its top.
var ExcludeFile = filepath.Join(".git", "info", "exclude")

// Top is the nearest directory at or above dir holding .git (a directory,
// or a file as in a worktree); "" when there is none or dir is "".
func Top(dir string) string {
	if dir == "" {
		return ""
	}
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// maxGitFile bounds what is read of a .git file or a HEAD: a path or a ref.
const maxGitFile = 64 << 10

// Head is the checked-out branch of the repository whose top is root, read
// from its HEAD file; for a detached HEAD, branch is "" and detached the
// commit's short hash. Both are "" when root is "" or HEAD cannot be read.
// A worktree's .git file names its real git directory.
func Head(root string) (branch, detached string) {
	if root == "" {
		return "", ""
	}
	// Read below root, no link out of it: a command can write .git and
	// HEAD, and 7 bytes of a file linked there would go to the endpoint
	// as a commit.
	b, err := untrusted.ReadIn(root, filepath.Join(".git", "HEAD"), untrusted.LinksWithin, maxGitFile)
	if errors.Is(err, syscall.ENOTDIR) {
		b, err = worktreeHead(root)
	}
	if err != nil {
		return "", ""
	}
	// git reads HEAD's first line. The branch is a line of the system
	// prompt: the rest of the file, or a line that is neither a ref nor a
	// commit (a command can write HEAD), must not reach it.
	head, _, _ := strings.Cut(string(b), "\n")
	head = strings.TrimSpace(head)
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		name := strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/")
		if !refName(name) {
			return "", ""
		}
		return name, ""
	}
	if len(head) >= 7 && strings.Trim(head, "0123456789abcdef") == "" {
		return "", head[:7]
	}
	return "", ""
}

// maxRefName bounds a branch name shown (git allows longer; no one uses them).
const maxRefName = 255

// refName reports whether name can be a branch as git names them: no
// spaces, control characters or the characters git refuses in a ref.
func refName(name string) bool {
	if name == "" || len(name) > maxRefName {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return false
		}
	}
	return true
}

// errNoGitdir: a .git file that does not say where its git directory is.
var errNoGitdir = errors.New("repo: .git names no gitdir")

// worktreeHead reads the HEAD of a worktree, whose .git is a file:
// "gitdir: <path>".
func worktreeHead(root string) ([]byte, error) {
	g, err := untrusted.ReadIn(root, ".git", untrusted.NoLinks, maxGitFile)
	if err != nil {
		return nil, err
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(g)), "gitdir:")
	if !ok {
		return nil, errNoGitdir
	}
	p = strings.TrimSpace(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return untrusted.ReadIn(p, "HEAD", untrusted.NoLinks, maxGitFile)
}
