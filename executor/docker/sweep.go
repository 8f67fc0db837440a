package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Sweep removes the containers of agents of this host that are gone: what a
// tether could not end (a container made but never started when its agent
// was killed, an engine that kept a stdin open). It touches only
// containers with our labels, and of those only ones whose agent's process
// is known dead; another host's are that host's business. It returns how
// many it removed.
func (d *Confiner) Sweep(ctx context.Context) (int, error) {
	res, err := d.cli.listContainers(ctx, labelAgent)
	if err != nil {
		return 0, d.explain(err, "", nil)
	}
	host, _ := os.Hostname()
	n := 0
	var errs []error
	for _, c := range res {
		if !agentGone(c.Labels[labelAgent], host) {
			continue
		}
		err := d.cli.removeContainer(ctx, c.ID)
		if removing(err) {
			// Another agent that started beside this one sweeps too.
			continue
		}
		if err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
			continue
		}
		d.logger.Info("removed the container of an agent that is gone", zap.String("container", shortID(c.ID)), zap.String("agent", c.Labels[labelAgent]), zap.String("session", c.Labels[labelSession]))
		n++
	}
	return n, errors.Join(errs...)
}

// removing reports whether err says the container is being removed
// already (the engine answers a second removal with a conflict).
func removing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already in progress")
}

// agentGone reports whether the agent named by label ("host/pid") is a
// process of this host that no longer exists. A pid reused since errs on
// the side of keeping the container.
func agentGone(label, host string) bool {
	h, pidStr, ok := strings.Cut(label, "/")
	if !ok || h != host {
		return false
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
