package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Probe finds what this kernel offers, trying each namespace in a child
// (the running binary re-executed as the helper's probe stage, so its main
// must call HelperMain) rather than trusting sysctls, and logs the result.
// Call it once at start. SimulateEnv degrades the result for tests.
func Probe(logger *zap.Logger) Availability {
	var a Availability
	if abi, err := ll.LandlockGetABIVersion(); err == nil {
		a.LandlockABI = abi
	}
	sim := os.Getenv(SimulateEnv)
	nons := false
	for _, s := range strings.Split(sim, ",") {
		switch s {
		case "nolandlock":
			a.LandlockABI = 0
			a.Simulated = sim
		case "nouserns":
			nons = true
			a.Simulated = sim
		}
	}
	if !nons {
		base := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS)
		switch {
		case tryNamespaces(base | unix.CLONE_NEWNET):
			a.UserNS, a.PIDNS, a.NetNS = true, true, true
		case tryNamespaces(base):
			a.UserNS, a.PIDNS = true, true
		case tryNamespaces(unix.CLONE_NEWUSER):
			a.UserNS = true
		}
	}
	if logger != nil {
		logger.Info("sandbox probe",
			zap.Int("landlock_abi", a.LandlockABI),
			zap.Bool("userns", a.UserNS),
			zap.Bool("pidns", a.PIDNS),
			zap.Bool("netns", a.NetNS),
			zap.String("network_denial", a.NetworkDenial()),
			zap.String("simulated", a.Simulated))
	}
	return a
}

// tryNamespaces runs the probe stage in new namespaces of the given kinds;
// with a PID namespace it must also mount /proc there.
func tryNamespaces(flags uintptr) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if uid != 0 {
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{helperArg0 + "-probe"}, Env: []string{helperEnv + "=" + stageProbe}, SysProcAttr: attr}
	return cmd.Run() == nil
}
