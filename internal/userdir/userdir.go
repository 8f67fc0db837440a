// Package userdir finds the user's own directories for dsh-acp: where the
// config file, the stored key and the user's AGENTS.md live. The state
// directory (sessions) is sessions/store's; this is its config twin.
package userdir

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// ConfigDir is the user's dsh-acp config directory for this machine.
func ConfigDir() (string, error) {
	return ConfigDirFor(runtime.GOOS, os.Getenv)
}

// ConfigDirFor is ConfigDir for a given GOOS and environment:
// $XDG_CONFIG_HOME/dsh-acp when XDG_CONFIG_HOME is absolute (the XDG spec
// says to ignore a relative one); else ~/Library/Application Support/dsh-acp
// on darwin and ~/.config/dsh-acp elsewhere. No HOME is an error. It touches
// nothing on disk.
func ConfigDirFor(goos string, getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "dsh-acp"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("config dir: neither XDG_CONFIG_HOME nor HOME is set")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "dsh-acp"), nil
	}
	return filepath.Join(home, ".config", "dsh-acp"), nil
}
