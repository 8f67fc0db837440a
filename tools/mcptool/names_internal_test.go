package mcptool

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

var apiName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 80)
	keys := []nameKey{
		{"github", "search_issues"},
		{"my server", "read.file"}, // sanitized: mcp__my_server__read_file
		{"my_server", "read_file"}, // clashes with the one above
		{"fs", long},
		{"fs", "ok-name"},
	}
	got := toolNames(keys)
	if got[0] != "mcp__github__search_issues" || got[4] != "mcp__fs__ok-name" {
		t.Errorf("plain names: %q", got)
	}
	for i, n := range got {
		if !apiName.MatchString(n) {
			t.Errorf("%q does not match the API's pattern", n)
		}
		for j := range i {
			if got[j] == n {
				t.Errorf("duplicate %q", n)
			}
		}
	}
	// Both clashing tools are renamed, the same way whatever the order.
	for _, i := range []int{1, 2} {
		if !strings.HasPrefix(got[i], "mcp__my_server__read_file_") || len(got[i]) != len("mcp__my_server__read_file_")+8 {
			t.Errorf("clash name %q", got[i])
		}
	}
	if len(got[3]) != 64 || !strings.HasPrefix(got[3], "mcp__fs__ttt") {
		t.Errorf("long name %q (%d)", got[3], len(got[3]))
	}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	back := toolNames(rev)
	slices.Reverse(back)
	if !slices.Equal(back, got) {
		t.Errorf("order changes names: %q vs %q", back, got)
	}
	// A tool's name does not depend on unrelated tools.
	if alone := toolNames(keys[3:4]); alone[0] != got[3] {
		t.Errorf("alone %q vs %q", alone[0], got[3])
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 B", 1023: "1023 B", 1024: "1 KB", 12 * 1024: "12 KB", 3 << 20: "3.0 MB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestServerEnv(t *testing.T) {
	t.Parallel()
	got := serverEnv([]string{"PATH=/a", "PATH=/b", "HOME=/h", "BASH_FUNC_x%%=() { :; }", "SHELL=() { x; }", "SECRET=1"},
		[]NameValue{{"PATH", "/mine"}, {"TOKEN", "t"}, {"", "x"}, {"A=B", "x"}})
	want := []string{"PATH=/mine", "HOME=/h", "TOKEN=t"}
	if !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
}
