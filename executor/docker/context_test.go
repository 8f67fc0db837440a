package docker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/docker"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

// dockerConfig makes a docker CLI config directory whose current context
// (`docker context use NAME`) has host as its endpoint, and returns an
// environment with DOCKER_CONFIG pointing at it (and the variables of
// more, as "K", "V", …).
func dockerConfig(t *testing.T, name, host string, more ...string) func(string) string {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(meta, "meta.json"), `{"Name":"`+name+`","Metadata":{},"Endpoints":{"docker":{"Host":"`+host+`","SkipTLSVerify":false}}}`)
	write(filepath.Join(dir, "config.json"), `{"auths":{},"currentContext":"`+name+`"}`)
	env := map[string]string{"DOCKER_CONFIG": dir}
	for i := 0; i+1 < len(more); i += 2 {
		env[more[i]] = more[i+1]
	}
	return func(k string) string { return env[k] }
}

func contextConfiner(t *testing.T, helper string, getenv func(string) string) (*executor.Local, error) {
	t.Helper()
	conf, err := docker.NewConfiner(docker.Options{Image: "x", Helper: helper, Getenv: getenv, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	ex, err := executor.NewLocal(executor.Options{DefaultWorkdir: t.TempDir(), SpillDir: t.TempDir(), Confine: conf, ConfineAll: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex, nil
}

// Without DOCKER_HOST the engine is the docker CLI's current context (how
// Docker Desktop, Colima and remote engines are usually set up), as the
// docker CLI finds it; a context that does not exist is a clear error.
func TestDockerContext(t *testing.T) {
	t.Parallel()
	helper := dockertest.Helper(t)
	t.Run("current context", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "engine.sock")
		getenv := dockerConfig(t, "colima", "unix://"+sock)
		if !docker.RemoteEngine(dockerConfig(t, "build-box", "ssh://me@build-box")) || docker.RemoteEngine(getenv) {
			t.Error("RemoteEngine: want true for an ssh:// context, false for a unix:// one")
		}
		ex, err := contextConfiner(t, helper, getenv)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err = ex.Run(ctx, executor.Spec{Command: "true", Owner: "s"})
		want := "the engine at unix://" + sock + " does not answer"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v; want it to say %q (the context's endpoint)", err, want)
		}
	})
	t.Run("DOCKER_CONTEXT names none", func(t *testing.T) {
		getenv := dockerConfig(t, "colima", "unix:///nowhere.sock", "DOCKER_CONTEXT", "absent")
		_, err := contextConfiner(t, helper, getenv)
		if err == nil || !strings.Contains(err.Error(), `context "absent" (from DOCKER_CONTEXT) does not exist`) {
			t.Fatalf("error %v; want one saying the context does not exist", err)
		}
	})
	t.Run("DOCKER_HOST wins", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "host.sock")
		getenv := dockerConfig(t, "colima", "unix:///nowhere.sock", "DOCKER_HOST", "unix://"+sock)
		ex, err := contextConfiner(t, helper, getenv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ex.Run(context.Background(), executor.Spec{Command: "true", Owner: "s"})
		if err == nil || !strings.Contains(err.Error(), "unix://"+sock) {
			t.Fatalf("error %v; want it to name DOCKER_HOST's engine", err)
		}
	})
	t.Run("a real engine", func(t *testing.T) {
		eng := dockertest.Need(t)
		s := newSetupWith(t, setupOpts{}, func(o *docker.Options) { o.Getenv = dockerConfig(t, "test-engine", eng.Host) })
		if res := s.runCmd(t, "s", "echo in-container"); res.Stdout.Text != "in-container\n" {
			t.Fatalf("stdout %q; want in-container", res.Stdout.Text)
		}
	})
}
