package changes

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// globalPatterns are the user's own excludes, as git finds them:
// core.excludesFile in ~/.gitconfig, else $XDG_CONFIG_HOME/git/ignore
// (~/.config/git/ignore). With no home, none.
func globalPatterns(home, xdg string) []gitignore.Pattern {
	if home == "" {
		return nil
	}
	if file := excludesFile(home); file != "" {
		return readPatterns(file, nil)
	}
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	return readPatterns(filepath.Join(xdg, "git", "ignore"), nil)
}

// excludesFile is core.excludesFile from ~/.gitconfig, "~/" expanded;
// empty if unset.
func excludesFile(home string) string {
	data, err := untrusted.ReadWhole(filepath.Join(home, ".gitconfig"), 0, maxIgnoreFile)
	if err != nil {
		return ""
	}
	cfg := config.New()
	if err := config.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return ""
	}
	file := cfg.Section("core").Options.Get("excludesfile")
	if rest, ok := strings.CutPrefix(file, "~/"); ok {
		file = filepath.Join(home, rest)
	}
	return file
}
