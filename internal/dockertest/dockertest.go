// Package dockertest finds the Docker Engine the tests may use (the one
// .ci/docker-up starts, named by DOCKER_HOST and DSH_TEST_DOCKER_IMAGE) and
// builds the static helper binary the containers need. Without an engine
// the tests that need one skip with the reason, unless DSH_TEST_EXECUTOR is
// docker: then they fail, so CI can never skip them silently.
package dockertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
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

// TCPProxy listens on 127.0.0.1 and forwards each connection to the
// engine's unix socket host (unix://PATH), so the tests reach the same
// engine as a remote one (tcp://); it stops at cleanup and returns the
// address.
func TCPProxy(t testing.TB, host string) string {
	t.Helper()
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the test engine %s is not on a unix socket", host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 64)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		var open []net.Conn
		for {
			select {
			case c := <-conns:
				up, err := net.Dial("unix", u.Path)
				if err != nil {
					c.Close()
					continue
				}
				open = append(open, c, up)
				go func() { _, _ = io.Copy(up, c); closeWrite(up) }()
				go func() { _, _ = io.Copy(c, up); closeWrite(c) }()
			case <-stop:
				for _, c := range open {
					c.Close()
				}
				return
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(stop)
		<-served
	})
	return ln.Addr().String()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
