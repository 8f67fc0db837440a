// Package dockertest finds the Docker Engine the tests may use (the one
// .ci/docker-up starts, named by DOCKER_HOST and DSH_TEST_DOCKER_IMAGE) and
// builds the static helper binary the containers need. Without an engine
// the tests that need one skip with the reason, unless DSH_TEST_EXECUTOR is
// docker: then they fail, so CI can never skip them silently.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Engine is the test engine.
type Engine struct {
	// Host is DOCKER_HOST.
	Host string
	// Image is an image with bash (DSH_TEST_DOCKER_IMAGE).
	Image string
	// Hidden is a directory of this host that the engine's host lacks
	// (DSH_TEST_DOCKER_HIDDEN; empty when unknown): a cwd under it is a
	// cwd a remote engine cannot see.
	Hidden string
}

// Required reports whether the tests were told to run against the engine
// (DSH_TEST_EXECUTOR=docker): then a missing engine fails them.
func Required() bool { return os.Getenv("DSH_TEST_EXECUTOR") == "docker" }

// Need returns the test engine, or skips t (fails it when Required).
func Need(t testing.TB) Engine {
	t.Helper()
	e, why := find()
	if why != "" {
		if Required() {
			t.Fatalf("DSH_TEST_EXECUTOR=docker but %s", why)
		}
		t.Skipf("no Docker Engine to test with: %s (start one with .ci/docker-up DIR)", why)
	}
	return e
}

var found = sync.OnceValues(func() (Engine, string) {
	e := Engine{Host: os.Getenv("DOCKER_HOST"), Image: os.Getenv("DSH_TEST_DOCKER_IMAGE"), Hidden: os.Getenv("DSH_TEST_DOCKER_HIDDEN")}
	switch {
	case runtime.GOOS != "linux":
		return e, "the helper inside containers is built for Linux hosts only in the tests"
	case e.Host == "" || e.Image == "":
		return e, "DOCKER_HOST and DSH_TEST_DOCKER_IMAGE are not set"
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		return e, "no docker client to check the engine with"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, docker, "image", "inspect", "--format", "{{.Id}}", e.Image).CombinedOutput()
	if err != nil {
		return e, fmt.Sprintf("the engine at %s has no image %s: %v: %s", e.Host, e.Image, err, strings.TrimSpace(string(out)))
	}
	return e, ""
})

func find() (Engine, string) { return found() }

var helper struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Helper returns a static build of dsh-acp for the containers, built once
// per test binary (RemoveHelper removes it).
func Helper(t testing.TB) string {
	t.Helper()
	helper.once.Do(func() {
		helper.dir, helper.err = os.MkdirTemp("", "dsh-acp-test-helper-")
		if helper.err != nil {
			return
		}
		helper.path = filepath.Join(helper.dir, "dsh-acp")
		helper.err = BuildHelper(helper.path)
	})
	if helper.err != nil {
		t.Fatalf("build the container helper: %v", helper.err)
	}
	return helper.path
}

// RemoveHelper removes what Helper built; for TestMain, after the tests.
func RemoveHelper() {
	if helper.dir != "" {
		_ = os.RemoveAll(helper.dir)
	}
}

// BuildHelper builds the static helper (dsh-acp with CGO_ENABLED=0) at path.
func BuildHelper(path string) error {
	cmd := exec.Command("go", "build", "-o", path, "github.com/dsh-acp/dsh-acp/cmd/dsh-acp")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, out)
	}
	return nil
}
