package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With the engine down, a command's result says so and the turn goes on;
// nothing needs an engine to start.
func TestExecDockerEngineDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "nobody.sock")
	script := writeScript(t,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"echo hi","description":"Say hi"}}]}`,
		`{"text":"the engine is down"}`)
	env := stateEnv(t)
	getenv := func(k string) string {
		if k == "DOCKER_HOST" {
			return "unix://" + sock
		}
		return env(k)
	}
	var out, errb bytes.Buffer
	code := run(ctx, []string{"exec", "--script", script, "--yes", "--cwd", dir, "--executor", "docker", "--docker-image", "img", "--docker-helper", binPath, "go"}, nil, &out, &errb, getenv)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"docker: the engine at unix://" + sock + " does not answer", "the engine is down"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDockerFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--executor", "docker"}, "--executor docker needs --docker-image"},
		{[]string{"--executor", "podman"}, "--executor must be local or docker"},
		{[]string{"--executor", "docker", "--docker-image", "i", "--docker-read", "rel"}, "--docker-read needs an absolute path"},
		{[]string{"--executor", "docker", "--docker-image", "i", "--docker-helper", "/bin/bash", "--no-persist"}, "is dynamically linked"},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, tc.args, strings.NewReader(""), &out, &errb, stateEnv(t))
		cancel()
		if code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error saying %q", tc.args, code, errb.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q; want nothing (it is the protocol's)", tc.args, out.String())
		}
	}
}

// The diffs walk the tree when commands write another host's files: a
// remote engine's.
func TestRemoteEngineWalks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		executor, host string
		remote         bool
	}{
		{"local", "tcp://build:2376", false},
		{"docker", "", false},
		{"docker", "unix:///var/run/docker.sock", false},
		{"docker", "tcp://build:2376", true},
		{"docker", "ssh://me@build", true},
	} {
		cfg := &config{getenv: func(k string) string {
			if k == "DOCKER_HOST" {
				return tc.host
			}
			return ""
		}}
		cfg.docker.executor = tc.executor
		if got := cfg.remoteEngine(); got != tc.remote {
			t.Errorf("--executor %s, DOCKER_HOST=%q: remote %v, want %v", tc.executor, tc.host, got, tc.remote)
		}
	}
}
