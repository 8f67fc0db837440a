package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/docker"
	settings "github.com/dsh-acp/dsh-acp/internal/config"
)

// dockerConfig is what --executor docker needs.
type dockerConfig struct {
	// executor is --executor: "local" or "docker".
	executor string
	image    string
	network  string
	helper   string
	read     []string
}

// executorKind is the executor commands run in: --executor, or docker under
// the test switch (DSH_TEST_EXECUTOR=docker).
func (c *config) executorKind() string {
	if c.getenv != nil && c.getenv(testExecutorEnv) == "docker" {
		return "docker"
	}
	if c.docker.executor == "" {
		return "local"
	}
	return c.docker.executor
}

func (c *dockerConfig) validate(kind string) error {
	switch kind {
	case "local":
	case "docker":
		if c.image == "" {
			return fmt.Errorf("--executor docker needs --docker-image (env DSH_DOCKER_IMAGE): an image with bash")
		}
		for i, p := range c.read {
			if !filepath.IsAbs(p) {
				return settings.Because("docker-read", settings.Element(i, fmt.Errorf("--docker-read needs an absolute path, got %q", p)))
			}
		}
	default:
		return fmt.Errorf("--executor must be local or docker, got %q", kind)
	}
	return nil
}

// remoteEngine: commands run in another host's files (a Docker engine at
// tcp:// or ssh://, as the executor tells them apart), whose writes raise
// no file-system event here: the diffs walk the tree after each command.
func (c *config) remoteEngine() bool {
	if c.executorKind() != "docker" || c.getenv == nil {
		return false
	}
	return docker.RemoteEngine(c.getenv)
}

// startDocker makes the Confiner that runs every command in its session's
// container, and sweeps, in the background, the containers of agents of
// this host that are gone. Nothing here waits for the engine: one that is
// down fails each command with a clear error, and the server keeps serving.
// The ssh processes of an ssh:// engine are g's to watch, as commands are.
func startDocker(cfg *config, limits executor.Limits, log *zap.Logger, g *guard) (*docker.Confiner, error) {
	helper := cfg.docker.helper
	if helper == "" {
		var err error
		if helper, err = docker.LocateHelper(); err != nil {
			return nil, err
		}
	}
	d, err := docker.NewConfiner(docker.Options{
		Getenv:    cfg.getenv,
		Image:     cfg.docker.image,
		Network:   cfg.docker.network,
		Read:      cfg.docker.read,
		Helper:    helper,
		KillGrace: limits.KillGrace,
		Watcher:   g.watcher(),
		RunMarker: g.runMarker(),
		Logger:    log.Named("docker"),
	})
	if err != nil {
		return nil, err
	}
	d.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := d.Sweep(ctx); err != nil {
			log.Warn("sweep the containers of gone agents", zap.Error(err))
		}
	})
	return d, nil
}
