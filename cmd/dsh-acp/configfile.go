package main

import (
	"path/filepath"
	"runtime"

	settings "github.com/dsh-acp/dsh-acp/internal/config"
	"github.com/dsh-acp/dsh-acp/internal/userdir"
)

// configPath is where config.toml is for this environment; "" when no
// config directory can be named (no HOME: an editor's bare environment).
func configPath(getenv env) string {
	dir, err := userdir.ConfigDirFor(runtime.GOOS, getenv)
	if err != nil {
		return ""
	}
	return filepath.Join(dir, settings.FileName)
}

// stateDirDefault is --state-dir's default for the commands that take no
// other setting (sessions, rules): DSH_STATE_DIR, else config.toml's
// state-dir, so they read the store the agent writes.
func stateDirDefault(getenv env) (string, error) {
	if dir := getenv.first("DSH_STATE_DIR"); dir != "" {
		return dir, nil
	}
	f, err := settings.LoadFile(configPath(getenv))
	if err != nil {
		return "", err
	}
	if e, ok := f.Lookup("state-dir"); ok && len(e.Values) == 1 {
		return e.Values[0], nil
	}
	return "", nil
}
