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
		"DATABASE_URL=postgres://app:s3cret@db/app",
		"MIRRORS=https://a.example/x https://u:pw@b.example/y",
		"PUBLIC_URL=https://user@host.example/path:x@y",
		"HTTP_PROXY=http://proxy:3128",
		"MY_PASSWD=p",
		"GCP_CREDENTIALS=/c.json",
		"SSH_AUTH_SOCK=/run/agent.sock",
	}
	tests := []struct {
		name     string
		keep     []string
		names    []string
		secrets  []string
		want     []string
		withheld []string
	}{
		{
			name:    "scrubbed",
			keep:    []string{"KEEP_TOKEN", "DSH_API_KEY"},
			names:   []string{"MY_MODEL_KEY"},
			secrets: []string{key, "ab"},
			want: append([]string{"PATH=/usr/bin", "HOME=/home/u", "KEEP_TOKEN=kept", "DUP=first",
				"PUBLIC_URL=https://user@host.example/path:x@y", "HTTP_PROXY=http://proxy:3128", "SSH_AUTH_SOCK=/run/agent.sock"}, agentEnv...),
			withheld: []string{"DEEPSEEK_API_KEY", "GITHUB_TOKEN", "aws_secret_access_key", "DB_Password", "DATABASE_URL", "MIRRORS", "MY_PASSWD", "GCP_CREDENTIALS"},
		},
		{
			name: "no secrets configured",
			keep: []string{"DATABASE_URL"},
			want: append([]string{"PATH=/usr/bin", "HOME=/home/u", "COPY_OF_IT=" + key, "AUTH_HEADER=Bearer " + key, "SHORT=ab", "DUP=first",
				"DATABASE_URL=postgres://app:s3cret@db/app", "PUBLIC_URL=https://user@host.example/path:x@y", "HTTP_PROXY=http://proxy:3128", "SSH_AUTH_SOCK=/run/agent.sock"}, agentEnv...),
			withheld: []string{"DSH_API_KEY", "DEEPSEEK_API_KEY", "MY_MODEL_KEY", "GITHUB_TOKEN", "aws_secret_access_key", "DB_Password", "KEEP_TOKEN", "MIRRORS", "MY_PASSWD", "GCP_CREDENTIALS"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, withheld := buildEnv(base, tc.keep, tc.names, tc.secrets)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.withheld, withheld); d != "" {
				t.Errorf("withheld (-want +got):\n%s", d)
			}
			if slices.ContainsFunc(got, func(kv string) bool { return kv == "DSH_API_KEY="+key }) {
				t.Error("API key kept")
			}
		})
	}
}
