package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// netFilter is the seccomp policy that denies a command the IP network
// Landlock does not govern, where there is no network namespace to do it
// (Landlock alone): Landlock's network rights (ABI ≥ 4) cover TCP bind
// and connect only, so UDP, ICMP echo ("ping") sockets, SCTP and the rest
// would leave. It fails socket(2) for AF_INET and AF_INET6 with EPERM
// unless the socket is a plain TCP one (SOCK_STREAM, protocol 0 or TCP) —
// or for every type where the kernel's Landlock has no TCP rights
// (tcp=false) — and io_uring_setup(2) altogether, since io_uring can make
// a socket without the socket(2) call a filter sees. The filter checks
// the native system call ABI only (see README: what escapes).
func netFilter(tcp bool) seccomp.Filter {
	var socket []seccomp.NameWithConditions
	for _, domain := range []uint64{unix.AF_INET, unix.AF_INET6} {
		dom := seccomp.Condition{Argument: 0, Operation: seccomp.Equal, Value: domain}
		if !tcp {
			socket = append(socket, seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{dom}})
			continue
		}
		// The type's low four bits are the kind (the rest are flags such
		// as SOCK_CLOEXEC); SOCK_STREAM is 1: bit 0 alone.
		const kind, stream = 0xf, unix.SOCK_STREAM
		socket = append(socket,
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{dom,
				{Argument: 1, Operation: seccomp.BitsNotSet, Value: stream}}},
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{dom,
				{Argument: 1, Operation: seccomp.BitsSet, Value: kind &^ stream}}},
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{dom,
				{Argument: 2, Operation: seccomp.NotEqual, Value: 0},
				{Argument: 2, Operation: seccomp.NotEqual, Value: unix.IPPROTO_TCP}}},
		)
	}
	return seccomp.Filter{
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{
				{Action: seccomp.ActionErrno, NamesWithCondtions: socket},
				{Action: seccomp.ActionErrno, Names: []string{"io_uring_setup"}},
			},
		},
	}
}

// denyNet loads f on the calling thread (no_new_privs is set already;
// without TSYNC the other threads stay as they are): what it forks
// inherits the filter.
func denyNet(f seccomp.Filter) error {
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
