package tools_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/tools"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"echo hello":                    "echo hello",
		"a\n\tb":                        "a\n\tb",
		"safe\rrm -rf x":                "safe␍rm -rf x",
		"\x1b[2K\x1b]0;t\x07":           "␛[2K␛]0;t␇",
		"del\x7f":                       "del␡",
		"c1\u0085":                      "c1⟨U+0085⟩",
		"rtl \u202eabc":                 "rtl ⟨U+202E⟩abc",
		"zero\u200bwidth\ufeff":         "zero⟨U+200B⟩width⟨U+FEFF⟩",
		"line\u2028sep":                 "line⟨U+2028⟩sep",
		"bad \xff byte":                 "bad ⟨\\xff⟩ byte",
		"世界 ␍ stays":                    "世界 ␍ stays",
		string([]byte{'a', 0xe4, 0xb8}): "a⟨\\xe4⟩⟨\\xb8⟩",
	} {
		if got := tools.Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
		if got := tools.Visible(want); got != want {
			t.Errorf("Visible is not idempotent on %q: %q", want, got)
		}
	}
}
