package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// sshDialer reaches an engine at ssh://[user@]host[:port] as the docker
// CLI does: each connection is an ssh process running `docker system
// dial-stdio` on the engine's host, its stdin and stdout the connection.
// The Go client has no ssh transport of its own.
type sshDialer struct {
	// ssh is the ssh program ("ssh" looked up in PATH when empty).
	ssh  string
	args []string // options, user, port, --, host
}

func newSSHDialer(host, ssh string) (*sshDialer, error) {
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
	return &sshDialer{ssh: ssh, args: append(args, "--", u.Hostname())}, nil
}

// dial starts one ssh process: the connection owns it, and ends it when
// closed.
func (s *sshDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(s.ssh, append(s.args, "docker", "system", "dial-stdio")...)
	// Its own process group: a terminal's ^C to the agent is not ssh's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("docker: ssh: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("docker: ssh: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("docker: start ssh to the engine: %w", err)
	}
	return &cmdConn{cmd: cmd, in: in, out: out}, nil
}

// cmdConn is a connection over a process's stdin and stdout.
type cmdConn struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser

	closeOnce sync.Once
	closeErr  error
}

func (c *cmdConn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// CloseWrite ends the engine's reading side: the remote dial-stdio sees
// EOF, as the tether's half-close needs.
func (c *cmdConn) CloseWrite() error { return c.in.Close() }

// Close ends the ssh process and reaps it.
func (c *cmdConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.in.Close()
		done := make(chan struct{})
		go func() {
			_ = c.cmd.Wait()
			close(done)
		}()
		proctab.EndChild(c.cmd.Process, done, 2*time.Second)
	})
	return c.closeErr
}

func (c *cmdConn) LocalAddr() net.Addr              { return sshAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return sshAddr{} }
func (c *cmdConn) SetDeadline(t time.Time) error    { return c.SetReadDeadline(t) }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }
func (c *cmdConn) SetReadDeadline(t time.Time) error {
	if f, ok := c.out.(*os.File); ok {
		return f.SetReadDeadline(t)
	}
	if t.IsZero() {
		return nil
	}
	return errors.ErrUnsupported
}

type sshAddr struct{}

func (sshAddr) Network() string { return "ssh" }
func (sshAddr) String() string  { return "ssh" }
