package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The ssh processes that reach an ssh:// engine are the agent's as its
// commands are: told to the watchdog, so an agent killed while one runs
// leaves no ssh behind. The "ssh" on PATH here is a script that holds the
// connection and never answers, as a tunnel gone quiet; the start's sweep
// of old containers dials it.
func TestNoOrphansSSHEngine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startAgentEnv(t, writeScript(t, `{"text":"ok"}`), []string{
		"PATH=" + bin + ":" + os.Getenv("PATH"),
		"DOCKER_HOST=ssh://tester@engine-host",
	}, "--executor", "docker", "--docker-image", "img", "--docker-helper", binPath)
	p.call(ctx, "initialize", map[string]any{"protocolVersion": 1})
	p.drain()
	p.waitMarked(ctx, isSleep1000)
	ended := time.Now()
	_ = p.cmd.Process.Kill()
	p.waitExit(ctx, true)
	p.expectNoSurvivors(ctx, ended)
}
