package main

import (
	"runtime/debug"
	"strings"
)

// version is what this binary was built from, read from its own build
// information: the module version for `go install …@vX`, else the VCS
// revision and time, else "(devel)".
var version = versionFrom(debug.ReadBuildInfo())

func versionFrom(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "(unknown: built without module information)"
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
