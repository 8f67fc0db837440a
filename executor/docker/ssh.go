package docker

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// sshDialer reaches an engine at ssh://[user@]host[:port] as the docker
// CLI does: each connection is an ssh process running `docker system
// dial-stdio` on the engine's host, its stdin and stdout the connection.
// The Go client has no ssh transport of its own.
type sshDialer struct {
	// ssh is the ssh program ("ssh" looked up in PATH when empty).
	ssh  string
	args []string // options, user, port, --, host
	// child is how each ssh process starts: an executor.ChildSpec but for
	// the program and its arguments (the watchdog is told of it).
	child executor.ChildSpec
}

func newSSHDialer(host, ssh string, child executor.ChildSpec) (*sshDialer, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("docker: engine address %s: %w", host, err)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("docker: engine address %s: want ssh://[user@]host[:port]", host)
	}
	if ssh == "" {
		ssh = "ssh"
	}
	// BatchMode: an agent started by an editor has nobody to type a
	// password; ssh fails at once instead of waiting. ServerAlive: a
	// connection gone quiet (a network change, a laptop's sleep) ends in
	// under a minute, and with it what waits on it, rather than never.
	args := []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3", "-T"}
	if u.User != nil {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	return &sshDialer{ssh: ssh, args: append(args, "--", u.Hostname()), child: child}, nil
}

// dial starts one ssh process, the executor's child: the connection owns
// it, and ends it when closed; the watchdog ends it if the agent is killed.
func (s *sshDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := exec.LookPath(s.ssh)
	if err != nil {
		return nil, fmt.Errorf("docker: ssh to the engine: %w", err)
	}
	spec := s.child
	spec.Path = path
	spec.Args = append([]string{s.ssh}, append(s.args, "docker", "system", "dial-stdio")...)
	c, err := executor.StartChild(spec)
	if err != nil {
		return nil, fmt.Errorf("docker: start ssh to the engine: %w", err)
	}
	return &childConn{c: c}, nil
}

// childConn is a connection over a child's stdin and stdout.
type childConn struct{ c *executor.Child }

func (c *childConn) Read(p []byte) (int, error)  { return c.c.Stdout().Read(p) }
func (c *childConn) Write(p []byte) (int, error) { return c.c.Stdin().Write(p) }

// CloseWrite ends the engine's reading side: the remote dial-stdio sees
// EOF, as the tether's half-close needs.
func (c *childConn) CloseWrite() error { return c.c.Stdin().Close() }

// Close ends the ssh process (see executor.Child.Close).
func (c *childConn) Close() error { return c.c.Close() }

func (c *childConn) LocalAddr() net.Addr              { return sshAddr{} }
func (c *childConn) RemoteAddr() net.Addr             { return sshAddr{} }
func (c *childConn) SetDeadline(t time.Time) error    { return c.SetReadDeadline(t) }
func (c *childConn) SetWriteDeadline(time.Time) error { return nil }
func (c *childConn) SetReadDeadline(t time.Time) error {
	return c.c.Stdout().SetReadDeadline(t)
}

type sshAddr struct{}

func (sshAddr) Network() string { return "ssh" }
func (sshAddr) String() string  { return "ssh" }
