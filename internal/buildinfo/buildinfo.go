// Package buildinfo names the version of a build of dsh-acp.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is what `dsh-acp version` and agentInfo.version say: release
// (the release build's), else what the build information info says — the
// module version for `go install …@vX`, else the VCS revision and time —
// else commit (what the build command passed), else "(devel)". ok is
// ReadBuildInfo's.
func Version(release, commit string, info *debug.BuildInfo, ok bool) string {
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
