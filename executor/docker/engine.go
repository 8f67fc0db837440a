package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moby/moby/api/types/mount"
)

// The engine's API, spoken here rather than through moby's Go client: that
// client imports OpenTelemetry and image-reference parsing whose package
// initialisation (regular expressions compiled, 0.5 MB of heap, about 1 ms)
// ran in every process of the binary — the agent, each session's zygote,
// the watchdog — whether or not a container was ever made; no build tag
// leaves it out. The dozen calls below are all this package asks of an
// engine. Of moby's API module only the mount type is used: its container
// types import go-digest, whose regular expressions are compiled at
// initialisation too.

// API versions: the newest this client speaks (the request and answer
// shapes below are unchanged since 1.25) and the oldest it accepts, as
// moby's client v0.6.3 did. The version used is the engine's, when lower.
const (
	maxAPIVersion = "1.57"
	minAPIVersion = "1.40"
)

// defaultHost is the engine's socket when nothing names another.
const defaultHost = "unix:///var/run/docker.sock"

// engine is a client of one Docker Engine.
type engine struct {
	host   string // the engine's address, as shown to the user
	base   url.URL
	client *http.Client
	tr     *http.Transport
	// dial makes one connection to the engine, TLS included: the attach's,
	// which leaves HTTP once upgraded.
	dial func(ctx context.Context) (net.Conn, error)

	// versionLock (a one-slot semaphore, so that a waiter's context still
	// ends its wait: the ping holding it may hang on a silent engine)
	// guards version: fixed by DOCKER_API_VERSION, else asked of the engine
	// once (its /_ping answer) and kept.
	versionLock chan struct{}
	version     string
}

// engineConfig is where the engine is and how to reach it.
type engineConfig struct {
	host string // unix://, tcp://, or "" for the default socket
	// sshDial connects to an ssh:// engine (host is then only shown).
	sshDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// tlsDir holds a docker context's ca.pem, cert.pem and key.pem (those
	// that are there); it takes precedence over DOCKER_CERT_PATH.
	tlsDir string
	getenv func(string) string
}

func newEngine(c engineConfig) (*engine, error) {
	e := &engine{host: c.host, versionLock: make(chan struct{}, 1)}
	if v := strings.TrimPrefix(strings.TrimSpace(c.getenv("DOCKER_API_VERSION")), "v"); v != "" {
		if _, _, ok := parseVersion(v); !ok {
			return nil, fmt.Errorf("DOCKER_API_VERSION=%s: want MAJOR.MINOR, such as 1.47", v)
		}
		e.version = v
	}
	tr := &http.Transport{
		// As moby's client: idle connections go, so a long-lived agent
		// does not keep them.
		MaxIdleConns:       6,
		IdleConnTimeout:    30 * time.Second,
		DisableCompression: true,
	}
	e.tr = tr
	e.client = &http.Client{
		Transport: tr,
		// The engine never redirects; a redirect is an error, not a request
		// sent elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if c.sshDial != nil {
		// The address only names the requests; the dialer connects.
		e.base = url.URL{Scheme: "http", Host: "docker"}
		tr.DialContext = c.sshDial
		e.dial = func(ctx context.Context) (net.Conn, error) { return c.sshDial(ctx, "tcp", "docker") }
		return e, nil
	}
	if e.host == "" {
		e.host = defaultHost
	}
	u, err := url.Parse(e.host)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "unix":
		sock := u.Host + u.Path
		if sock == "" {
			return nil, fmt.Errorf("%s: no socket path", e.host)
		}
		e.base = url.URL{Scheme: "http", Host: "docker"}
		d := &net.Dialer{}
		e.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return e.dial(ctx) }
	case "tcp":
		if u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%s: want tcp://HOST:PORT", e.host)
		}
		conf, err := tlsConfig(c)
		if err != nil {
			return nil, err
		}
		addr := u.Host
		if u.Port() == "" {
			// The docker CLI's default ports.
			port := "2375"
			if conf != nil {
				port = "2376"
			}
			addr = net.JoinHostPort(u.Hostname(), port)
		}
		e.base = url.URL{Scheme: "http", Host: addr}
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		e.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
		if conf != nil {
			e.base.Scheme = "https"
			tr.TLSClientConfig = conf
			e.dial = func(ctx context.Context) (net.Conn, error) {
				return (&tls.Dialer{NetDialer: d, Config: conf}).DialContext(ctx, "tcp", addr)
			}
		}
		tr.DialContext = d.DialContext
		// As moby's client (go-connections): a tcp engine's API calls honour
		// HTTP_PROXY and NO_PROXY.
		tr.Proxy = http.ProxyFromEnvironment
	default:
		return nil, fmt.Errorf("%s: the engine's address must be unix://, tcp:// or ssh://", e.host)
	}
	return e, nil
}

// tlsConfig is the TLS of a tcp:// engine: a docker context's files, else
// DOCKER_CERT_PATH's (verified unless DOCKER_TLS_VERIFY is empty), else
// none.
func tlsConfig(c engineConfig) (*tls.Config, error) {
	dir, verify, from := c.tlsDir, true, "the docker context's TLS files"
	exclusive := true
	if dir == "" {
		dir = c.getenv("DOCKER_CERT_PATH")
		verify = c.getenv("DOCKER_TLS_VERIFY") != ""
		from = "DOCKER_CERT_PATH=" + dir
		exclusive = false
	}
	if dir == "" {
		return nil, nil
	}
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil && c.tlsDir != "" {
			return "" // a context's directory holds only the files it has
		}
		return p
	}
	// An empty DOCKER_TLS_VERIFY asks for no verification, as for the
	// docker CLI.
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify}
	if ca := file("ca.pem"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		pool := x509.NewCertPool()
		if !exclusive {
			if sys, err := x509.SystemCertPool(); err == nil {
				pool = sys
			}
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no certificate", from, ca)
		}
		conf.RootCAs = pool
	}
	cert, key := file("cert.pem"), file("key.pem")
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

func (e *engine) close() { e.tr.CloseIdleConnections() }

// apiError is an error answer of the engine's.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return "Error response from daemon: " + e.msg }

// notFound reports whether err is the engine's "no such container" or
// "no such image".
func notFound(err error) bool {
	var a *apiError
	return errors.As(err, &a) && a.status == http.StatusNotFound
}

// connError: the engine could not be reached at all.
type connError struct {
	host string
	err  error
}

func (e *connError) Error() string {
	return "cannot connect to the Docker engine at " + e.host + ": " + e.err.Error()
}
func (e *connError) Unwrap() error { return e.err }

func connFailed(err error) bool {
	var c *connError
	return errors.As(err, &c)
}

// apiVersion is the version for requests: DOCKER_API_VERSION's, else the
// engine's (when older than ours), asked once.
func (e *engine) apiVersion(ctx context.Context) (string, error) {
	select {
	case e.versionLock <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-e.versionLock }()
	if e.version != "" {
		return e.version, nil
	}
	resp, err := e.send(ctx, http.MethodGet, "/_ping", nil, nil, "")
	if err != nil {
		return "", err
	}
	drain(resp)
	v := resp.Header.Get("API-Version")
	if v == "" {
		e.version = maxAPIVersion
		return e.version, nil
	}
	if !versionLess(v, maxAPIVersion) {
		v = maxAPIVersion
	}
	if _, _, ok := parseVersion(v); !ok {
		return "", fmt.Errorf("the engine at %s says its API version is %q", e.host, v)
	}
	if versionLess(v, minAPIVersion) {
		return "", fmt.Errorf("the engine at %s speaks API %s; this agent needs %s or newer (Docker 19.03)", e.host, v, minAPIVersion)
	}
	e.version = v
	return v, nil
}

func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return x, y, found && err1 == nil && err2 == nil && x >= 0 && y >= 0
}

func versionLess(a, b string) bool {
	a1, a2, _ := parseVersion(a)
	b1, b2, _ := parseVersion(b)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// request builds a request of the versioned API.
func (e *engine) request(ctx context.Context, method, path string, query url.Values, body io.Reader) (*http.Request, error) {
	v, err := e.apiVersion(ctx)
	if err != nil {
		return nil, err
	}
	u := e.base
	u.Path = "/v" + v + path
	u.RawQuery = query.Encode()
	return http.NewRequestWithContext(ctx, method, u.String(), body)
}

// call sends one request of the versioned API; an answer of 400 or over is
// an *apiError. body is JSON-encoded unless it is an io.Reader.
func (e *engine) call(ctx context.Context, method, path string, query url.Values, body any, contentType string) (*http.Response, error) {
	v, err := e.apiVersion(ctx)
	if err != nil {
		return nil, err
	}
	return e.send(ctx, method, "/v"+v+path, query, body, contentType)
}

func (e *engine) send(ctx context.Context, method, path string, query url.Values, body any, contentType string) (*http.Response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		r, contentType = bytes.NewReader(j), "application/json"
	}
	u := e.base
	u.Path = path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &connError{host: e.host, err: err}
	}
	if err := answerErr(resp); err != nil {
		drain(resp)
		return nil, err
	}
	return resp, nil
}

// answerErr is the engine's error answer as an *apiError, nil for success.
func answerErr(resp *http.Response) error {
	if resp.StatusCode < 400 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &m) == nil && m.Message != "" {
		msg = m.Message
	}
	if msg == "" {
		msg = resp.Status
	}
	return &apiError{status: resp.StatusCode, msg: clipAnswer(msg)}
}

// maxAnswerText bounds what an error repeats of the engine's answer: a
// proxy in front of a tcp:// engine may answer with a whole HTML page, and
// the error is a command's result the model reads.
const maxAnswerText = 512

// clipAnswer is s cut to maxAnswerText bytes (at a rune boundary).
func clipAnswer(s string) string {
	if len(s) <= maxAnswerText {
		return s
	}
	cut := maxAnswerText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// drain reads what is left of an answer (a few bytes) and closes it, so
// its connection serves the next request.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// callJSON sends a request and decodes its answer into out (nil: none).
func (e *engine) callJSON(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := e.call(ctx, method, path, query, body, "")
	if err != nil {
		return err
	}
	defer drain(resp)
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("the engine's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// createRequest is a container's configuration: the fields of the API's
// ContainerConfig and HostConfig this package sets (the engine's defaults
// for the rest).
type createRequest struct {
	Image        string
	User         string
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	OpenStdin    bool
	StdinOnce    bool
	WorkingDir   string
	Entrypoint   []string
	Cmd          []string
	Labels       map[string]string
	HostConfig   hostConfig
}

type hostConfig struct {
	LogConfig   logConfig
	AutoRemove  bool
	Init        *bool
	Mounts      []mount.Mount
	SecurityOpt []string
	NetworkMode string `json:",omitempty"`
}

type logConfig struct{ Type string }

func (e *engine) createContainer(ctx context.Context, cfg createRequest) (string, error) {
	var out struct{ ID string }
	if err := e.callJSON(ctx, http.MethodPost, "/containers/create", nil, cfg, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("the engine made a container with no id")
	}
	return out.ID, nil
}

func (e *engine) startContainer(ctx context.Context, id string) error {
	return e.callJSON(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// removeContainer removes a container by force (killing it if it runs).
func (e *engine) removeContainer(ctx context.Context, id string) error {
	return e.callJSON(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}}, nil, nil)
}

// waitRemoved returns when the engine has removed the container (it was
// made with AutoRemove).
func (e *engine) waitRemoved(ctx context.Context, id string) error {
	var out struct {
		Error *struct{ Message string }
	}
	if err := e.callJSON(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"removed"}}, nil, &out); err != nil {
		return err
	}
	if out.Error != nil && out.Error.Message != "" {
		return errors.New(out.Error.Message)
	}
	return nil
}

// listed is a container of a listing.
type listed struct {
	ID     string `json:"Id"`
	Labels map[string]string
}

// listContainers lists every container (running or not) with the label.
func (e *engine) listContainers(ctx context.Context, label string) ([]listed, error) {
	filters, err := json.Marshal(map[string]map[string]bool{"label": {label: true}})
	if err != nil {
		return nil, err
	}
	var out []listed
	err = e.callJSON(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(filters)}}, nil, &out)
	return out, err
}

// copyTo unpacks a tar stream into the container at dir.
func (e *engine) copyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	q := url.Values{"path": {dir}, "noOverwriteDirNonDir": {"true"}}
	resp, err := e.call(ctx, http.MethodPut, "/containers/"+id+"/archive", q, tar, "application/x-tar")
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// imageEnv is the environment an image's configuration sets.
func (e *engine) imageEnv(ctx context.Context, image string) ([]string, error) {
	var out struct {
		Config *struct{ Env []string }
	}
	if err := e.callJSON(ctx, http.MethodGet, "/images/"+image+"/json", nil, nil, &out); err != nil {
		return nil, err
	}
	if out.Config == nil {
		return nil, nil
	}
	return out.Config.Env, nil
}

// pullImage pulls an image (anonymously) and returns when the engine has
// it, or with the first error its progress stream reports.
func (e *engine) pullImage(ctx context.Context, image string) error {
	name, tag := splitReference(image)
	resp, err := e.call(ctx, http.MethodPost, "/images/create", url.Values{"fromImage": {name}, "tag": {tag}}, nil, "")
	if err != nil {
		return err
	}
	defer drain(resp)
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("the engine's pull progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// splitReference splits an image reference into the name and the tag or
// digest the pull API takes apart; no tag is "latest" (an empty tag would
// pull every tag of the repository).
func splitReference(ref string) (name, tag string) {
	if name, digest, ok := strings.Cut(ref, "@"); ok {
		// A digest wins over a tag written beside it, as for docker pull.
		if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
			name = name[:i]
		}
		return name, digest
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// hijacked is an attach's connection once the engine stopped speaking
// HTTP on it: the container's multiplexed output to read, its stdin to
// write.
type hijacked struct {
	net.Conn
	// Reader reads the connection, bytes the engine sent right after its
	// answer included.
	Reader *bufio.Reader
}

// CloseWrite ends the container's stdin and leaves its output to read.
func (h hijacked) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// attach attaches to a container's stdin, stdout and stderr: the request is
// upgraded to a raw stream (the engine answers 101), which outlives ctx.
func (e *engine) attach(ctx context.Context, id string) (conn hijacked, err error) {
	q := url.Values{"stream": {"1"}, "stdin": {"1"}, "stdout": {"1"}, "stderr": {"1"}}
	req, err := e.request(ctx, http.MethodPost, "/containers/"+id+"/attach", q, nil)
	if err != nil {
		return conn, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	c, err := e.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return conn, ctx.Err()
		}
		return conn, &connError{host: e.host, err: err}
	}
	// ctx bounds the exchange, not the stream: a deadline or a cancel meanwhile
	// closes the connection, which ends the exchange with an error.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer func() {
		if !stop() || err != nil {
			_ = c.Close()
			if ctx.Err() != nil {
				err = ctx.Err()
			}
		}
	}()
	if err := req.Write(c); err != nil {
		return conn, fmt.Errorf("attach: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return conn, fmt.Errorf("attach: %w", err)
	}
	if err := answerErr(resp); err != nil {
		_ = resp.Body.Close()
		return conn, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return conn, fmt.Errorf("attach: the engine answered %s, not a stream", resp.Status)
	}
	return hijacked{Conn: c, Reader: br}, nil
}
