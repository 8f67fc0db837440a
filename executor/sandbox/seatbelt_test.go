package sandbox_test

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

func TestProfile(t *testing.T) {
	base := sandbox.Policy{Workdir: "/Users/me/proj", TempDir: "/private/tmp/s1", Shell: "/bin/bash"}
	cases := []struct {
		name    string
		p       func(sandbox.Policy) sandbox.Policy
		want    []string // in this order
		without []string
	}{
		{
			name: "default",
			p:    func(p sandbox.Policy) sandbox.Policy { return p },
			want: []string{
				"(version 1)\n(allow default)\n",
				"(deny file-write*)\n",
				`(allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp/s1") (literal "/dev/null")`,
				`(literal "/dev/tty") (literal "/dev/ptmx")`,
				`(regex #"^/dev/ttys[0-9]+$")`,
				"(deny network*)\n",
			},
			without: []string{"(deny file-read*)", "(deny file-read* file-write*"},
		},
		{
			name:    "network allowed",
			p:       func(p sandbox.Policy) sandbox.Policy { p.Network = true; return p },
			want:    []string{"(deny file-write*)\n"},
			without: []string{"network"},
		},
		{
			name: "deny after the write grants, re-opened inside",
			p: func(p sandbox.Policy) sandbox.Policy {
				p.Deny = []string{"/Users/me/.state", "/Users/me/proj/.agent", "/var/log/dsh.log"}
				p.Read = []string{"/", "/Users/me/.state/spill/own"}
				p.Write = []string{"/Users/me/proj/.agent/ok"}
				return p
			},
			want: []string{
				"(deny file-read*)\n(allow file-read-metadata)\n",
				`(allow file-read* (subpath "/") (subpath "/Users/me/.state/spill/own")`,
				`(allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp/s1") (subpath "/Users/me/proj/.agent/ok")`,
				`(deny file-read* file-write* (subpath "/Users/me/.state") (subpath "/Users/me/proj/.agent") (subpath "/var/log/dsh.log"))`,
				`(allow file-read* (subpath "/Users/me/.state/spill/own"))`,
				`(allow file-read* file-write* (subpath "/Users/me/proj/.agent/ok"))`,
				"(deny network*)",
			},
		},
		{
			name: "quoting",
			p:    func(p sandbox.Policy) sandbox.Policy { p.Workdir = `/tmp/a "b" \c`; return p },
			want: []string{`(subpath "/tmp/a \"b\" \\c")`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sandbox.Profile(c.p(base))
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("profile lacks (or misorders) %q:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range c.without {
				if strings.Contains(got, w) {
					t.Errorf("profile has %q:\n%s", w, got)
				}
			}
			if strings.Count(got, "(") != strings.Count(got, ")") {
				t.Errorf("unbalanced profile:\n%s", got)
			}
		})
	}
}
