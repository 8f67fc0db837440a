package sandbox

import (
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestNetFilterProgram runs the seccomp filter in a BPF interpreter over
// seccomp_data records, case by case, for both kinds (TCP left to
// Landlock, or every IP socket denied). The kernel's own verdicts on real
// sockets are TestSocketsDenied's; this covers what a test cannot easily
// make from a shell: another ABI's call, an x32 call, arguments with high
// bits set.
func TestNetFilterProgram(t *testing.T) {
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	native := auditArch[runtime.GOARCH]
	other := uint32(unix.AUDIT_ARCH_I386)
	if native == other {
		other = unix.AUDIT_ARCH_X86_64
	}
	sock := func(domain, typ, proto uint64) call {
		return call{native, unix.SYS_SOCKET, [6]uint64{domain, typ, proto}}
	}
	cases := []struct {
		name       string
		c          call
		tcp, noTCP uint32 // the verdict with tcp=true and tcp=false
	}{
		{"udp4", sock(unix.AF_INET, unix.SOCK_DGRAM, 0), eperm, eperm},
		{"udp6 cloexec", sock(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP), eperm, eperm},
		{"ping", sock(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), eperm, eperm},
		{"raw", sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW), eperm, eperm},
		{"seqpacket", sock(unix.AF_INET6, unix.SOCK_SEQPACKET, 132), eperm, eperm},
		{"sctp stream", sock(unix.AF_INET, unix.SOCK_STREAM, 132), eperm, eperm},
		// SOCK_STREAM's bit with another kind's bits beside it.
		{"stream|dgram bits", sock(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_DGRAM, 0), eperm, eperm},
		{"tcp4", sock(unix.AF_INET, unix.SOCK_STREAM, 0), allow, eperm},
		{"tcp6 nonblock", sock(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, unix.IPPROTO_TCP), allow, eperm},
		{"unix dgram", sock(unix.AF_UNIX, unix.SOCK_DGRAM, 0), allow, allow},
		{"netlink", sock(unix.AF_NETLINK, unix.SOCK_RAW, 0), allow, allow},
		// The kernel reads int arguments: high bits do not make another
		// domain, nor hide a protocol.
		{"udp4, domain's high bits set", sock(1<<32|unix.AF_INET, unix.SOCK_DGRAM, 0), eperm, eperm},
		{"udp4, type's high bits set", sock(unix.AF_INET, 1<<40|unix.SOCK_DGRAM, 0), eperm, eperm},
		{"tcp4, protocol's high bits set", sock(unix.AF_INET, unix.SOCK_STREAM, 1<<33), allow, eperm},
		{"io_uring_setup", call{native, unix.SYS_IO_URING_SETUP, [6]uint64{2}}, eperm, eperm},
		{"read", call{native, unix.SYS_READ, [6]uint64{0}}, allow, allow},
		// Another ABI is not checked (README: what escapes).
		{"udp4, another ABI", call{other, unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_DGRAM}}, allow, allow},
	}
	if runtime.GOARCH == "amd64" {
		const x32 = 0x40000000
		enosys := unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		cases = append(cases, struct {
			name       string
			c          call
			tcp, noTCP uint32
		}{"x32 socket", call{native, x32 | 41, [6]uint64{unix.AF_INET, unix.SOCK_DGRAM}}, enosys, enosys})
	}
	for _, tcp := range []bool{true, false} {
		prog, err := netFilter(tcp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sockFilter(prog); err != nil {
			t.Fatalf("tcp=%v: %v", tcp, err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("tcp=%v: %v", tcp, err)
		}
		for _, c := range cases {
			want := c.tcp
			if !tcp {
				want = c.noTCP
			}
			got, err := vm.Run(c.c.data())
			if err != nil || uint32(got) != want {
				t.Errorf("tcp=%v, %s: %#x %v, want %#x", tcp, c.name, got, err, want)
			}
		}
	}
}

// call is a system call as seccomp sees it.
type call struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// data is c's struct seccomp_data as the interpreter reads it: it loads
// 32-bit words big-endian, the kernel in the machine's order, so each word
// is written big-endian at the offset the kernel would find it.
func (c call) data() []byte {
	b := make([]byte, offArgs+8*6)
	binary.BigEndian.PutUint32(b[offNr:], c.nr)
	binary.BigEndian.PutUint32(b[offArch:], c.arch)
	for i, a := range c.args {
		lo := argLow(uint32(i))
		hi := lo + 4
		if lo%8 != 0 {
			hi = lo - 4
		}
		binary.BigEndian.PutUint32(b[lo:], uint32(a))
		binary.BigEndian.PutUint32(b[hi:], uint32(a>>32))
	}
	return b
}
