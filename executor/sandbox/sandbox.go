// Package sandbox confines one `bash -c CMD` to a policy: what it may write
// (the session's cwd, a private temporary directory, the usual devices), what
// it may read (everything but the agent's own files, or a narrower list) and
// whether it may use the network.
//
// On Linux each session's commands are forked by its zygote (see Zygote):
// the agent's own binary, re-executed once per session in a hidden mode
// (see HelperMain), whose spawning thread carries the Landlock domain;
// Landlock is never applied in the agent itself. Where unprivileged user
// namespaces work, the zygote is pid 1 of the session's own user, PID,
// mount and network namespaces, so nothing a command starts outlives the
// session and /proc shows only the session's processes. The zygote takes
// its policy from an inherited pipe (fd 3), never from a command line, and
// its commands from a socket no command inherits.
//
// On macOS the command runs under sandbox-exec with a Seatbelt profile
// generated from the same policy (see Profile).
//
// The package starts confined commands (Confiner, an executor.Confiner);
// the executor signals, times out and ends them like any other.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// HelperFailed is the exit code of a helper that could not confine or start
// the command; its reason is on stderr after HelperPrefix. (125, like env(1)
// and container runtimes, so that it does not collide with bash's 126/127.)
const HelperFailed = 125

// HelperPrefix starts every line the helper itself writes to stderr.
const HelperPrefix = "dsh-acp sandbox: "

// ErrUnavailable is wrapped by Require when the kernel cannot confine commands.
var ErrUnavailable = errors.New("sandbox unavailable")

// Policy is what one command may touch. Paths must be absolute; they are
// cleaned, and symlinks in them resolved, when the command starts.
type Policy struct {
	// Workdir is the command's working directory. It is writable.
	Workdir string
	// TempDir is the session's private temporary directory (see
	// NewSessionDir); TMPDIR points there and it is writable. Empty means
	// no temporary directory: TMPDIR is removed from the environment.
	TempDir string
	// Write lists more writable paths (directories or files). Write
	// entries are readable too and win over Deny.
	Write []string
	// Read narrows what is readable to these trees (plus Workdir, TempDir,
	// Write and the few system trees bash needs, see SystemRead). Nil or
	// empty means the whole filesystem. An entry strictly inside a Deny
	// entry re-opens that subtree: Read {"/", own} with Deny {parent of own}
	// hides the parent except own.
	Read []string
	// Deny lists trees and files that stay unreadable (and unwritable)
	// inside what Read allows: the agent's session store, its log file,
	// other sessions' spill files. Missing paths are ignored.
	Deny []string
	// Network allows network access. False denies it where the kernel can:
	// TCP bind/connect via Landlock (ABI >= 4) and, with a network
	// namespace, everything else (UDP, abstract unix sockets, any other
	// host address).
	Network bool
	// Shell is the absolute path of bash.
	Shell string
	// ReadOnly lists the trees that, with namespaces, are read-only mounts
	// (but for write trees inside), so that not even a file's metadata
	// changes there; nil means SystemTrees.
	ReadOnly []string
}

// SystemTrees are where the system's programs and configuration live: a
// command running as root could otherwise set a setuid bit or open a
// mode there (Landlock does not govern metadata), a route to root for
// every local user once the command is gone.
var SystemTrees = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/boot", "/srv", "/var", "/root", "/snap"}

// SystemRead are the trees kept readable when Policy.Read narrows reading,
// so that bash and the usual tools still start.
var SystemRead = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys"}

// Devices are the device files and directories a command may write.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// check rejects a policy the helper could not apply faithfully.
func (p Policy) check() error {
	if p.Workdir == "" {
		return errors.New("policy: no workdir")
	}
	if p.Shell == "" {
		return errors.New("policy: no shell")
	}
	for _, group := range [][]string{{p.Workdir, p.TempDir, p.Shell}, p.Write, p.Read, p.Deny, p.ReadOnly} {
		for _, path := range group {
			if path != "" && !filepath.IsAbs(path) {
				return fmt.Errorf("policy: path %q is not absolute", path)
			}
		}
	}
	return nil
}

// Availability is what the running kernel offers (see Probe).
type Availability struct {
	// LandlockABI is the Landlock ABI version; 0 means no Landlock.
	LandlockABI int
	// UserNS: an unprivileged process can create a user namespace.
	UserNS bool
	// PIDNS: a PID namespace (with a mount namespace and a fresh /proc)
	// can be created inside that user namespace.
	PIDNS bool
	// NetNS: a network namespace can be created inside it.
	NetNS bool
	// Seatbelt: sandbox-exec is present (macOS).
	Seatbelt bool
	// Simulated names the test switch that degraded this result, if any.
	Simulated string
}

// NetworkDenial says how much of the network a denied command loses.
func (a Availability) NetworkDenial() string {
	switch {
	case a.Seatbelt:
		return "all"
	case a.NetNS:
		return "all"
	case a.LandlockABI >= 1:
		// TCP by Landlock (ABI ≥ 4), every other IP socket (every one
		// below ABI 4) by a seccomp filter; see netFilter.
		return "ip"
	default:
		return "none"
	}
}

// Require returns an error wrapping ErrUnavailable when a can confine
// nothing, for the caller to turn into a refusal to start: a sandbox that
// was asked for is never silently skipped.
func Require(a Availability) error {
	if a.Seatbelt || a.LandlockABI >= 1 {
		return nil
	}
	why := "the kernel has no Landlock"
	if a.Simulated != "" {
		why += " (simulated by " + SimulateEnv + ")"
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, why)
}

// SimulateEnv is a test switch read by Probe: a comma-separated list of
// "nolandlock" (report Landlock ABI 0) and "nouserns" (report no
// namespaces).
const SimulateEnv = "DSH_SANDBOX_SIMULATE"

// within reports whether path is strictly inside dir.
func within(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return strings.HasPrefix(path, dir+"/")
}

// Stdio is a helper process's standard files, handed in by main: the
// package never reaches for the process's own, which in the agent carry
// the protocol.
type Stdio struct {
	In, Out, Err *os.File
}
