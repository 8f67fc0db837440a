//go:build unix

package docker_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

// A FIFO where the docker CLI keeps its config (a container's command can
// write the user's home) is refused at once, not waited on: the agent's
// start would hang with it.
func TestDockerConfigFIFONeverBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "config.json"), 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	getenv := func(k string) string {
		if k == "DOCKER_CONFIG" {
			return dir
		}
		return ""
	}
	if docker.RemoteEngine(getenv) {
		t.Error("RemoteEngine: true for an engine that cannot be found")
	}
	_, err := docker.NewConfiner(docker.Options{Image: "x", Helper: dockertest.Helper(t), Getenv: getenv, Logger: zap.NewNop()})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("NewConfiner: %v; want the config refused as not a regular file", err)
	}
}
