package repo

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// UserExcludes are the user's own ignore rules, as git finds them:
// core.excludesFile in the user's git config (UserConfig), else
// $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore). With no home, none.
func UserExcludes(home, xdg string) []gitignore.Pattern {
	if home == "" {
		return nil
	}
	if file := UserConfig(home, xdg, "core", "excludesfile"); file != "" {
		if rest, ok := strings.CutPrefix(file, "~/"); ok {
			file = filepath.Join(home, rest)
		}
		return ReadPatterns(file, nil)
	}
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	return ReadPatterns(filepath.Join(xdg, "git", "ignore"), nil)
}

// UserConfig is the value of key in section of the user's global git
// config, as git reads it: ~/.gitconfig, else $XDG_CONFIG_HOME/git/config
// (~/.config/git/config; git reads it first, so ~/.gitconfig wins). ""
// when it is unset or no file can be read. Includes are not followed.
func UserConfig(home, xdg, section, key string) string {
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, path := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")} {
		if v := configValue(path, section, key); v != "" {
			return v
		}
	}
	return ""
}

// configValue is the value of key in section of the git config file at
// path; "" when it is unset or the file cannot be read.
func configValue(path, section, key string) string {
	data, err := untrusted.ReadWhole(path, 0, MaxIgnoreFile)
	if err != nil {
		return ""
	}
	cfg := config.New()
	if err := config.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return ""
	}
	return cfg.Section(section).Options.Get(key)
}
