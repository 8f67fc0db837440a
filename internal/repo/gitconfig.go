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
// core.excludesFile in ~/.gitconfig, else $XDG_CONFIG_HOME/git/ignore
// (~/.config/git/ignore). With no home, none.
func UserExcludes(home, xdg string) []gitignore.Pattern {
	if home == "" {
		return nil
	}
	if file := UserConfig(home, "core", "excludesfile"); file != "" {
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

// UserConfig is the value of key in section of the user's ~/.gitconfig;
// "" when it is unset or the file cannot be read.
func UserConfig(home, section, key string) string {
	data, err := untrusted.ReadWhole(filepath.Join(home, ".gitconfig"), 0, MaxIgnoreFile)
	if err != nil {
		return ""
	}
	cfg := config.New()
	if err := config.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return ""
	}
	return cfg.Section(section).Options.Get(key)
}
