package sandbox_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// child is the test binary run by a confined command (testutil.ChildEnv):
// "dial PATH" connects to the unix socket at PATH, exit 0 if it could;
// "sockets" tries to make each kind of socket (see sockets).
func child(mode string) int {
	if mode == "tgkill" && len(os.Args) >= 3 {
		return tgkillAll(os.Args[2])
	}
	if mode == "sockets" {
		return sockets()
	}
	if mode == "stopped-zygote" && len(os.Args) >= 4 {
		return stoppedZygote(os.Args[2], os.Args[3] == "namespaces")
	}
	if mode != "dial" || len(os.Args) < 3 {
		return 2
	}
	c, err := net.Dial("unix", os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = c.Close()
	return 0
}

// tgkillAll sends SIGSTOP to every thread of pid (a confined command
// aiming at its zygote's forking thread) and says how many took it.
func tgkillAll(pid string) int {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return 2
	}
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		fmt.Println("no tasks:", err)
		return 2
	}
	took := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err == nil && syscall.Tgkill(n, tid, syscall.SIGSTOP) == nil {
			took++
		}
	}
	fmt.Printf("stopped %d of %d\n", took, len(tasks))
	return 0
}

// socketKinds are the sockets "sockets" tries to make: name, domain, type,
// protocol.
var socketKinds = []struct {
	name               string
	domain, typ, proto int
}{
	{"udp4", syscall.AF_INET, syscall.SOCK_DGRAM, 0},
	{"udp6", syscall.AF_INET6, syscall.SOCK_DGRAM, 0},
	{"udp4 cloexec nonblock", syscall.AF_INET, syscall.SOCK_DGRAM | syscall.SOCK_CLOEXEC | syscall.SOCK_NONBLOCK, syscall.IPPROTO_UDP},
	{"ping", syscall.AF_INET, syscall.SOCK_DGRAM, syscall.IPPROTO_ICMP},
	{"sctp stream", syscall.AF_INET, syscall.SOCK_STREAM, 132},
	{"sctp seqpacket", syscall.AF_INET6, syscall.SOCK_SEQPACKET, 132},
	{"tcp4", syscall.AF_INET, syscall.SOCK_STREAM, 0},
	{"tcp6 cloexec", syscall.AF_INET6, syscall.SOCK_STREAM | syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP},
	{"unix dgram", syscall.AF_UNIX, syscall.SOCK_DGRAM, 0},
}

// sockets prints, for each of socketKinds, "name: ok" or "name: EPERM"
// (or another error), and then io_uring_setup's outcome.
func sockets() int {
	for _, k := range socketKinds {
		fd, err := syscall.Socket(k.domain, k.typ, k.proto)
		switch {
		case err == nil:
			_ = syscall.Close(fd)
			fmt.Printf("%s: ok\n", k.name)
		case err == syscall.EPERM:
			fmt.Printf("%s: EPERM\n", k.name)
		default:
			fmt.Printf("%s: %v\n", k.name, err)
		}
	}
	// A UDP socket asked for with the domain's high 32 bits set: the
	// kernel reads an int, so this is AF_INET to it and must be to the
	// filter.
	domain := uint64(1)<<32 | syscall.AF_INET
	fd, _, errno := syscall.RawSyscall(syscall.SYS_SOCKET, uintptr(domain), syscall.SOCK_DGRAM, 0)
	switch errno {
	case 0:
		_ = syscall.Close(int(fd))
		fmt.Println("udp4 high bits: ok")
	case syscall.EPERM:
		fmt.Println("udp4 high bits: EPERM")
	default:
		fmt.Printf("udp4 high bits: %v\n", errno)
	}
	// io_uring_setup(2, NULL): EFAULT when allowed, EPERM when filtered.
	_, _, errno = syscall.Syscall(425, 2, 0, 0)
	fmt.Printf("io_uring_setup: %v\n", errno == syscall.EPERM)
	return 0
}

// stoppedZygote starts a zygote confined to workdir, runs a command in it,
// stops the zygote, prints "ZYGOTE COMMAND" (their pids) and waits for
// stdin to end: the test then kills this process.
func stoppedZygote(workdir string, ns bool) int {
	l, err := sandbox.NewLauncher(sandbox.LauncherOptions{Availability: sandbox.Probe(nil), NoNamespaces: !ns})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	z, err := l.Zygote(sandbox.Policy{Workdir: workdir, TempDir: workdir, Shell: bashPath()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pr, err := z.Start("exec sleep 1000", nil, os.Stderr, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pr.Pid()) + "/stat")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fields := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+2:]))
	zygote, _ := strconv.Atoi(fields[1])
	if err := syscall.Kill(zygote, syscall.SIGSTOP); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(zygote, pr.Pid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
