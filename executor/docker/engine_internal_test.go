package docker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The engine client against real HTTP servers of the tests' own (on
// 127.0.0.1 and on a unix socket): what the Docker leg cannot show with
// one engine — version negotiation, TLS, the error answers, the pull's
// stream, the attach's upgrade.

// fakeEngine records the requests' paths and answers with fn.
type fakeEngine struct {
	mu    sync.Mutex
	paths []string
}

func (f *fakeEngine) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

func (f *fakeEngine) handler(apiVersion string, fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		if r.URL.Path == "/_ping" {
			if apiVersion != "" {
				w.Header().Set("API-Version", apiVersion)
			}
			_, _ = io.WriteString(w, "OK")
			return
		}
		fn(w, r)
	})
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func tcpEngine(t *testing.T, srv *httptest.Server, vars map[string]string) *engine {
	t.Helper()
	e, err := newEngine(engineConfig{host: "tcp://" + srv.Listener.Addr().String(), getenv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

func listOK(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, `[{"Id":"abc","Labels":{"dev.dsh-acp.agent":"h/1"}}]`)
}

func TestEngineVersion(t *testing.T) {
	for _, tc := range []struct {
		name, engine, env, want, err string
	}{
		{name: "the engine's when older", engine: "1.41", want: "/v1.41/containers/json"},
		{name: "ours when the engine's is newer", engine: "1.99", want: "/v1.57/containers/json"},
		{name: "ours when the engine says none", engine: "", want: "/v1.57/containers/json"},
		{name: "DOCKER_API_VERSION, not asked", engine: "1.41", env: "v1.44", want: "/v1.44/containers/json"},
		{name: "too old", engine: "1.39", err: "speaks API 1.39; this agent needs 1.40 or newer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{}
			srv := httptest.NewServer(f.handler(tc.engine, listOK))
			defer srv.Close()
			e := tcpEngine(t, srv, map[string]string{"DOCKER_API_VERSION": tc.env})
			for range 2 {
				got, err := e.listContainers(context.Background(), labelAgent)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("err = %v, want %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].ID != "abc" || got[0].Labels[labelAgent] != "h/1" {
					t.Fatalf("listed %+v", got)
				}
			}
			paths := f.seen()
			wantPing := 1
			if tc.env != "" {
				wantPing = 0
			}
			pings := 0
			for _, p := range paths {
				if p == "GET /_ping" {
					pings++
					continue
				}
				if !strings.HasPrefix(p, "GET "+tc.want+"?") || !strings.Contains(p, "all=1") || !strings.Contains(p, "filters=%7B%22label%22%3A%7B%22dev.dsh-acp.agent%22%3Atrue%7D%7D") {
					t.Errorf("request %q, want GET %s?all=1&filters=…", p, tc.want)
				}
			}
			if pings != wantPing {
				t.Errorf("pinged %d times, want %d (%q)", pings, wantPing, paths)
			}
		})
	}
	if _, err := newEngine(engineConfig{host: "tcp://127.0.0.1:1", getenv: env(map[string]string{"DOCKER_API_VERSION": "latest"})}); err == nil || !strings.Contains(err.Error(), "DOCKER_API_VERSION=latest: want MAJOR.MINOR") {
		t.Errorf("a DOCKER_API_VERSION that is no version: %v", err)
	}
	for _, host := range []string{"npipe:////./pipe/docker_engine", "http://h:1", "unix://", "tcp://"} {
		if _, err := newEngine(engineConfig{host: host, getenv: env(nil)}); err == nil {
			t.Errorf("engine address %s accepted", host)
		}
	}
}

func TestEngineErrors(t *testing.T) {
	f := &fakeEngine{}
	srv := httptest.NewServer(f.handler("1.41", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/json"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"No such image: nothing:here"}`)
		default:
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, "removal of container abc is already in progress\n")
		}
	}))
	defer srv.Close()
	e := tcpEngine(t, srv, nil)
	_, err := e.imageEnv(context.Background(), "nothing:here")
	if !notFound(err) || err.Error() != "Error response from daemon: No such image: nothing:here" {
		t.Errorf("image inspect: %v (not found: %v)", err, notFound(err))
	}
	err = e.removeContainer(context.Background(), "abc")
	if notFound(err) || !removing(err) {
		t.Errorf("remove: %v", err)
	}
	if p := f.seen(); p[len(p)-1] != "DELETE /v1.41/containers/abc?force=1" || p[len(p)-2] != "GET /v1.41/images/nothing:here/json" {
		t.Errorf("requests %q", p)
	}

	// A proxy's page in place of the engine's answer: the error says how
	// it starts, not all of it.
	page := "<html>" + strings.Repeat("x", 100_000) + "</html>"
	proxy := httptest.NewServer(f.handler("1.41", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, page)
	}))
	defer proxy.Close()
	_, err = tcpEngine(t, proxy, nil).listContainers(context.Background(), labelAgent)
	if msg := fmt.Sprint(err); len(msg) > 600 || !strings.HasPrefix(msg, "Error response from daemon: <html>xxx") || !strings.HasSuffix(msg, "x…") {
		t.Errorf("a 100 KB page as the answer: %d bytes of error, starting %.80q, ending %q", len(msg), msg, msg[max(0, len(msg)-40):])
	}

	// Nothing listens: a connection error, which explain turns into "does not answer".
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	down, err := newEngine(engineConfig{host: "tcp://" + addr, getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer down.close()
	_, err = down.listContainers(context.Background(), labelAgent)
	if !connFailed(err) || notFound(err) {
		t.Errorf("an engine that is not there: %v", err)
	}
	d := &Confiner{host: down.host}
	if msg := d.explain(err, "/w", nil).Error(); !strings.HasPrefix(msg, "docker: the engine at tcp://"+addr+" does not answer") {
		t.Errorf("explained as %q", msg)
	}
	// A cancelled request is the cancel, not a connection failure.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.imageEnv(ctx, "x"); connFailed(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestEnginePull(t *testing.T) {
	for ref, want := range map[string]string{
		"alpine":                     "fromImage=alpine&tag=latest",
		"alpine:3.20":                "fromImage=alpine&tag=3.20",
		"reg.example:5000/a/b":       "fromImage=reg.example%3A5000%2Fa%2Fb&tag=latest",
		"reg.example:5000/a/b:1.2":   "fromImage=reg.example%3A5000%2Fa%2Fb&tag=1.2",
		"a/b@sha256:0123":            "fromImage=a%2Fb&tag=sha256%3A0123",
		"reg.example:5000/a:1@sha:1": "fromImage=reg.example%3A5000%2Fa&tag=sha%3A1",
	} {
		name, tag := splitReference(ref)
		q := "fromImage=" + strings.NewReplacer(":", "%3A", "/", "%2F").Replace(name) + "&tag=" + strings.NewReplacer(":", "%3A").Replace(tag)
		if q != want {
			t.Errorf("%s: %s, want %s", ref, q, want)
		}
	}
	f := &fakeEngine{}
	srv := httptest.NewServer(f.handler("1.41", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"Pulling from library/x","id":"latest"}`+"\n")
		if r.URL.Query().Get("fromImage") == "bad" {
			_, _ = io.WriteString(w, `{"errorDetail":{"message":"pull access denied for bad"},"error":"pull access denied for bad"}`+"\n")
			return
		}
		_, _ = io.WriteString(w, `{"status":"Status: Downloaded newer image for x:latest"}`+"\n")
	}))
	defer srv.Close()
	e := tcpEngine(t, srv, nil)
	if err := e.pullImage(context.Background(), "x"); err != nil {
		t.Errorf("pull x: %v", err)
	}
	if err := e.pullImage(context.Background(), "bad"); err == nil || err.Error() != "pull access denied for bad" {
		t.Errorf("pull bad: %v", err)
	}
	if p := f.seen(); p[1] != "POST /v1.41/images/create?fromImage=x&tag=latest" {
		t.Errorf("requests %q", p)
	}
}

// selfSigned makes a key pair and its self-signed certificate, written as
// PEM files cert and key in dir.
func selfSigned(t *testing.T, dir, cert, key string, server bool) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "dsh-acp test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	if err := os.WriteFile(filepath.Join(dir, cert), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if key != "" {
		if err := os.WriteFile(filepath.Join(dir, key), keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// TestEngineTLS: DOCKER_CERT_PATH's client certificate is presented and its
// CA verifies the engine; an engine the CA did not sign is refused unless
// DOCKER_TLS_VERIFY is empty; a docker context's TLS directory is used the
// same way.
func TestEngineTLS(t *testing.T) {
	certs := t.TempDir()
	srvPair := selfSigned(t, certs, "ca.pem", "", true)
	clientPair := selfSigned(t, certs, "cert.pem", "key.pem", false)
	clients := x509.NewCertPool()
	clients.AddCert(clientPair.Leaf)

	f := &fakeEngine{}
	srv := httptest.NewUnstartedServer(f.handler("1.41", func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) != 1 {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		listOK(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}
	srv.StartTLS()
	defer srv.Close()

	e := tcpEngine(t, srv, map[string]string{"DOCKER_CERT_PATH": certs, "DOCKER_TLS_VERIFY": "1"})
	if e.base.Scheme != "https" {
		t.Errorf("scheme %s", e.base.Scheme)
	}
	if _, err := e.listContainers(context.Background(), labelAgent); err != nil {
		t.Fatalf("with the certificates: %v", err)
	}

	// Another CA: refused when verifying, accepted when DOCKER_TLS_VERIFY is empty.
	other := t.TempDir()
	selfSigned(t, other, "ca.pem", "", true)
	for _, name := range []string{"cert.pem", "key.pem"} {
		b, err := os.ReadFile(filepath.Join(certs, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bad := tcpEngine(t, srv, map[string]string{"DOCKER_CERT_PATH": other, "DOCKER_TLS_VERIFY": "1"})
	if _, err := bad.listContainers(context.Background(), labelAgent); !connFailed(err) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an engine the CA did not sign: %v", err)
	}
	insecure := tcpEngine(t, srv, map[string]string{"DOCKER_CERT_PATH": other})
	if _, err := insecure.listContainers(context.Background(), labelAgent); err != nil {
		t.Errorf("DOCKER_TLS_VERIFY empty: %v", err)
	}

	// A docker context's TLS directory, over DOCKER_CERT_PATH.
	ctxEngine, err := newEngine(engineConfig{host: "tcp://" + srv.Listener.Addr().String(), tlsDir: certs, getenv: env(map[string]string{"DOCKER_CERT_PATH": other, "DOCKER_TLS_VERIFY": "1"})})
	if err != nil {
		t.Fatal(err)
	}
	defer ctxEngine.close()
	if _, err := ctxEngine.listContainers(context.Background(), labelAgent); err != nil {
		t.Errorf("the context's TLS files: %v", err)
	}

	if _, err := newEngine(engineConfig{host: "tcp://127.0.0.1:1", getenv: env(map[string]string{"DOCKER_CERT_PATH": t.TempDir()})}); err == nil || !strings.Contains(err.Error(), "DOCKER_CERT_PATH=") {
		t.Errorf("DOCKER_CERT_PATH without files: %v", err)
	}
}

// TestEngineAttach: over a unix socket, the attach is upgraded to a raw
// stream that keeps the bytes the engine sent with its answer, outlives the
// request's context, and half-closes (the tether's end).
func TestEngineAttach(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{}
	body := make(chan []byte, 1)
	srv := httptest.NewUnstartedServer(f.handler("1.41", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1.41/containers/abc/attach" || r.Header.Get("Upgrade") != "tcp" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"No such container: abc"}`)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(rw, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\nhello")
		_ = rw.Flush()
		b, _ := io.ReadAll(rw) // until the client's half-close
		body <- b
		_, _ = io.WriteString(conn, "bye")
	}))
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	e, err := newEngine(engineConfig{host: "unix://" + sock, getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()

	ctx, cancel := context.WithCancel(context.Background())
	conn, err := e.attach(ctx, "abc")
	cancel() // the stream outlives the request's context
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "ping"); err != nil {
		t.Fatal(err)
	}
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if read := <-body; string(got) != "hellobye" || string(read) != "ping" {
		t.Errorf("read %q, the engine read %q", got, read)
	}
	if _, err := e.attach(context.Background(), "gone"); !notFound(err) {
		t.Errorf("attach to a missing container: %v", err)
	}
}

// TestCreateRequestShape: the container's configuration goes as the API's
// ContainerConfig with its HostConfig inside.
func TestCreateRequestShape(t *testing.T) {
	init := true
	b, err := json.Marshal(createRequest{Image: "img", Cmd: []string{"a"}, HostConfig: hostConfig{LogConfig: logConfig{Type: "none"}, AutoRemove: true, Init: &init}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	hc, _ := m["HostConfig"].(map[string]any)
	if m["Image"] != "img" || hc["AutoRemove"] != true || hc["Init"] != true || hc["LogConfig"].(map[string]any)["Type"] != "none" {
		t.Errorf("create body %s", b)
	}
	if _, ok := hc["NetworkMode"]; ok {
		t.Errorf("an empty NetworkMode is sent (the engine's default network is chosen by its absence): %s", b)
	}
}

// TestEngineVersionWaitEndsWithItsContext: while one request's version
// question hangs on a silent engine, another request's wait for it ends
// with that request's context (a session's close, a removal's deadline),
// not when the engine answers.
func TestEngineVersionWaitEndsWithItsContext(t *testing.T) {
	pinged := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			close(pinged)
			<-release
			w.Header().Set("API-Version", "1.41")
			return
		}
		listOK(w, r)
	}))
	defer srv.Close()
	e := tcpEngine(t, srv, nil)
	first := make(chan error, 1)
	go func() {
		_, err := e.listContainers(context.Background(), labelAgent)
		first <- err
	}()
	<-pinged
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := e.listContainers(ctx, labelAgent)
		second <- err
	}()
	cancel()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the second request: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the second request waited for the first one's ping past its own context")
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the first request: %v", err)
	}
}
