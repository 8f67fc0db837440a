package main

import (
	"runtime/debug"

	"github.com/dsh-acp/dsh-acp/internal/buildinfo"
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
	return buildinfo.Version(release, commit, info, ok)
}
