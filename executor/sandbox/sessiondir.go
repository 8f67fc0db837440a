package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SessionDir is a session's private temporary directory: the TempDir of its
// commands' policies. Remove it when the session closes.
type SessionDir struct {
	// Path is the directory (mode 0700).
	Path string
}

// NewSessionDir creates a private temporary directory under parent. Empty
// parent means os.TempDir().
func NewSessionDir(parent string) (*SessionDir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "dsh-acp-session-*")
	if err != nil {
		return nil, fmt.Errorf("session temp dir: %w", err)
	}
	return &SessionDir{Path: dir}, nil
}

// Remove deletes the directory and everything in it, also what a command
// left without write permission. Removing a removed directory is no error.
func (d *SessionDir) Remove() error {
	err := os.RemoveAll(d.Path)
	if err == nil {
		return nil
	}
	// A command may have made read-only directories: open them up, retry.
	_ = filepath.WalkDir(d.Path, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(d.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove session temp dir: %w", err)
	}
	return nil
}
