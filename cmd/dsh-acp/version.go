package main

import (
	"runtime/debug"
	"strings"
)

// release is the release this binary is, X.Y.Z as CHANGELOG.md's newest
// section names it. Only the release build sets it
// (-ldflags "-X main.release=X.Y.Z", see .goreleaser.yaml); every other
// build says what it was built from instead.
var release string

// commit is the commit a build from a clone was made from, for where the
// build information has none (GOFLAGS=-buildvcs=false, a git worktree):
// the README's from-source command sets it (-X main.commit=$(git rev-parse …)).
var commit string

// version is what `dsh-acp version` and agentInfo.version say: the release,
// else what the binary's own build information says — the module version
// for `go install …@vX`, else the VCS revision and time — else the commit
// the build command passed, else "(devel)".
func version() string {
	info, ok := debug.ReadBuildInfo()
	return versionFrom(release, commit, info, ok)
}

func versionFrom(release, commit string, info *debug.BuildInfo, ok bool) string {
	if release != "" {
		return release
	}
	if !ok || info == nil {
		info = &debug.BuildInfo{}
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		rev = commit
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	parts := []string{"(devel)", rev}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "+modified")
	}
	return strings.Join(parts, " ")
}
