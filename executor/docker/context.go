package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// dockerContext is the engine a docker CLI context names (`docker context
// use`, DOCKER_CONTEXT): how Docker Desktop, Colima, Rancher Desktop and
// remote engines are usually reached when DOCKER_HOST is not set.
type dockerContext struct {
	name string
	host string
	// tls holds ca.pem, cert.pem and key.pem for a TLS endpoint; empty
	// when the context has none.
	tls string
}

// currentContext is the context the docker CLI would use when DOCKER_HOST
// is not set: DOCKER_CONTEXT, else the config file's currentContext. ok is
// false for none or "default" (the engine's default socket). The store is
// the CLI's: $DOCKER_CONFIG or ~/.docker, each context's endpoint in
// contexts/meta/<sha256 of its name>/meta.json.
func currentContext(getenv func(string) string) (c dockerContext, ok bool, err error) {
	dir := getenv("DOCKER_CONFIG")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return c, false, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	name := getenv("DOCKER_CONTEXT")
	from := "DOCKER_CONTEXT"
	if name == "" {
		cfgPath := filepath.Join(dir, "config.json")
		if name, err = configContext(cfgPath); err != nil {
			return c, false, err
		}
		from = cfgPath
	}
	if name == "" || name == "default" {
		return c, false, nil
	}
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	metaPath := filepath.Join(dir, "contexts", "meta", id, "meta.json")
	b, err := untrusted.Read(metaPath, 0, maxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, fmt.Errorf("docker: context %q (from %s) does not exist: no %s (docker context ls lists them)", name, from, metaPath)
	}
	if err != nil {
		return c, false, fmt.Errorf("docker: context %q: %w", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return c, false, fmt.Errorf("docker: context %q: %s: %w", name, metaPath, err)
	}
	host := meta.Endpoints["docker"].Host
	if host == "" {
		return c, false, fmt.Errorf("docker: context %q (%s) has no Docker endpoint", name, metaPath)
	}
	c = dockerContext{name: name, host: host}
	tls := filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(tls); err == nil {
		c.tls = tls
	}
	return c, true, nil
}

// configContext is the currentContext of the docker CLI's config file; ""
// when the file or the field is not there.
func configContext(path string) (string, error) {
	b, err := untrusted.Read(path, 0, maxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("docker: read the docker CLI's config: %w", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("docker: the docker CLI's config %s: %w", path, err)
	}
	return cfg.CurrentContext, nil
}

// maxConfigFile bounds a docker CLI file read (config.json, a context's
// meta.json: a few KiB each). They are read as untrusted: a FIFO or a link
// to /dev/zero there (a container's command can write the user's home)
// must not hold the agent's start.
const maxConfigFile = 1 << 20
