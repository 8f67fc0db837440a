package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestVersion: the version comes from the build, never a
// constant: the release the release build stamps, else the module version,
// else the VCS revision and time.
func TestVersion(t *testing.T) {
	t.Parallel()
	setting := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	vcs := setting("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "true")
	devel := debug.Module{Version: "(devel)"}
	cases := []struct {
		release, commit string
		info            *debug.BuildInfo
		want            string
	}{
		{"0.1.0", "", &debug.BuildInfo{Main: devel, Settings: vcs}, "0.1.0"},
		{"", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"", "fedcba987654", &debug.BuildInfo{Main: devel, Settings: vcs}, "(devel) 0123456789ab 2026-12-01T10:00:00Z +modified"},
		{"", "fedcba987654", &debug.BuildInfo{Main: devel}, "(devel) fedcba987654"},
		{"", "", &debug.BuildInfo{Main: devel}, "(devel)"},
	}
	for _, c := range cases {
		if got := Version(c.release, c.commit, c.info, true); got != c.want {
			t.Errorf("Version = %q, want %q", got, c.want)
		}
	}
}
