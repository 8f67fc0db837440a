package executor

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildEnv(t *testing.T) {
	t.Parallel()
	const key = "sk-0123456789abcdef"
	base := []string{
		"PATH=/usr/bin",
		"HOME=/home/u",
		"DSH_API_KEY=" + key,
		"DEEPSEEK_API_KEY=other",
		"MY_MODEL_KEY=x",
		"GITHUB_TOKEN=ghp",
		"aws_secret_access_key=s",
		"DB_Password=p",
		"KEEP_TOKEN=kept",
		"COPY_OF_IT=" + key,
		"AUTH_HEADER=Bearer " + key,
		"SHORT=ab",
		"GIT_ASKPASS=/usr/bin/ksshaskpass",
		"SSH_ASKPASS=/usr/bin/ssh-askpass",
		"TERM=xterm-256color",
		"PAGER=less",
		"DUP=first",
		"DUP=second",
		"NOEQUALS",
	}
	tests := []struct {
		name    string
		keep    []string
		names   []string
		secrets []string
		want    []string
	}{
		{
			name:    "scrubbed",
			keep:    []string{"KEEP_TOKEN", "DSH_API_KEY"},
			names:   []string{"MY_MODEL_KEY"},
			secrets: []string{key, "ab"},
			want:    append([]string{"PATH=/usr/bin", "HOME=/home/u", "KEEP_TOKEN=kept", "DUP=first"}, agentEnv...),
		},
		{
			name: "no secrets configured",
			want: append([]string{"PATH=/usr/bin", "HOME=/home/u", "COPY_OF_IT=" + key, "AUTH_HEADER=Bearer " + key, "SHORT=ab", "DUP=first"}, agentEnv...),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := buildEnv(base, tc.keep, tc.names, tc.secrets)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
			if slices.ContainsFunc(got, func(kv string) bool { return kv == "DSH_API_KEY="+key }) {
				t.Error("API key kept")
			}
		})
	}
}
