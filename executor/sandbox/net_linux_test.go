package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// TestUDPDenied: with the network denied no datagram leaves a confined
// command, in both modes: with namespaces the command's network namespace
// has no way out; with Landlock alone (which governs TCP only) a seccomp
// filter refuses the socket. With the network allowed the same datagram
// arrives — and it is the first the listener reads, so none of the denied
// ones did.
func TestUDPDenied(t *testing.T) {
	ln, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	port := strconv.Itoa(ln.LocalAddr().(*net.UDPAddr).Port)
	send := func(what string) string { return "echo " + what + " > /dev/udp/127.0.0.1/" + port }
	ctx := testutil.Context(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			l := launcher(t, m)
			p := policy(t)
			r := run(ctx, t, l, send("denied-"+m.name), p)
			if r.code == 0 {
				t.Errorf("udp with the network denied: %+v", r)
			}
			if m.nons && !strings.Contains(r.stderr, "Operation not permitted") {
				t.Errorf("udp with Landlock alone: want EPERM, got %q", r.stderr)
			}
			p.Network = true
			expectOK(t, run(ctx, t, l, send("allowed-"+m.name), p), "udp with the network allowed")
			buf := make([]byte, 64)
			_ = ln.SetReadDeadline(time.Now().Add(10 * time.Second)) // the datagram is queued already
			n, _, err := ln.ReadFrom(buf)
			if got := string(buf[:n]); err != nil || got != "allowed-"+m.name+"\n" {
				t.Errorf("first datagram read: %q %v", got, err)
			}
		})
	}
}

// TestSocketsDenied: with Landlock alone and the network denied, every IP
// socket but a plain TCP one (which Landlock governs) is refused, flags or
// explicit protocol notwithstanding, and so is io_uring (which makes
// sockets without socket(2)); unix sockets and everything with the network
// allowed are not.
func TestSocketsDenied(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("%s=sockets %q -test.run=^$", testutil.ChildEnv, self)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			l := launcher(t, m)
			for _, network := range []bool{false, true} {
				c := newConfiner(t, l, sandbox.ConfinerOptions{Network: network})
				out, ws := runConfined(t, c, executor.Spec{Command: cmd, Workdir: t.TempDir(), Owner: "s"})
				if ws.ExitStatus() != 0 {
					t.Fatalf("sockets: %v\n%s", ws, out)
				}
				filtered := m.nons && !network
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					name, res, _ := strings.Cut(line, ": ")
					wantDenied := filtered && !strings.HasPrefix(name, "tcp") && name != "unix dgram"
					switch {
					case name == "io_uring_setup":
						if res != strconv.FormatBool(filtered) {
							t.Errorf("network %v: io_uring_setup refused: %s", network, res)
						}
					case wantDenied && res != "EPERM":
						t.Errorf("network %v: %s: %s, want EPERM", network, name, res)
					case !wantDenied && res == "EPERM":
						t.Errorf("network %v: %s refused", network, name)
					}
				}
			}
		})
	}
}
