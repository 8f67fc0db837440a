// Package secretenv keeps credentials out of the agent's environment block
// (what /proc/PID/environ shows) and its memory: Hide re-executes the
// process without them and hands over only those the agent uses; Protect
// makes its memory unreadable to commands of the same user.
package secretenv

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

// secretsFDEnv names the descriptor a re-executed dsh-acp reads its
// credentials from.
const secretsFDEnv = "DSH_ACP_SECRETS_FD"

// maxHandOver keeps the hand-over below the pipe buffer, so writing it
// before exec can never block.
const maxHandOver = 60 << 10

// isCredential: the model key variables, and every variable the executor
// withholds from commands as a credential: by name (KEY, SECRET, TOKEN,
// PASSWORD, …) or by value (a URL with a password).
func isCredential(name, value string) bool {
	return isModelKey(name) || executor.LooksSecret(name) || executor.LooksSecretValue(value)
}

func isModelKey(name string) bool {
	return slices.Contains(executor.DefaultLimits().CredentialEnv, name)
}

// neededByAgent: variables the agent itself uses that may carry a password
// (an authenticated proxy on the way to the model). They are kept in its Go
// environment; commands still do not get them.
func neededByAgent() []string {
	return []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
}

// withheldPrefix marks, in the hand-over, the name of a credential that was
// dropped (its value is not handed over), so the start-up log can say so.
const withheldPrefix = "\x01withheld="

// Hide keeps credentials out of this process's environment block and
// out of its memory. The executor removes them from every command's
// environment, but /proc/<pid>/environ of the agent itself shows the
// environment it was started with — readable by any command running as the
// same user, and by root, whom non-dumpable does not stop. So when
// credentials arrive in the environment, the program re-executes itself
// (same pid, same stdio) without them and hands over through a pipe only
// those it uses: the model key in use (not a second one), the --keep-env
// names and the proxies. They
// then live only in the Go environment (os.Getenv), never in the block /proc
// shows; every other credential (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, …) is
// gone from the process altogether.
//
// It must run first thing in main: exec replaces the process. It returns
// the credential variables dropped at the hand-over: neither the agent nor
// its commands have them.
func Hide() (dropped []string, err error) {
	if fdText, ok := os.LookupEnv(secretsFDEnv); ok {
		os.Unsetenv(secretsFDEnv)
		fd, err := strconv.Atoi(fdText)
		if err != nil || !isHandOverPipe(fd) {
			// Not ours (set by hand, or inherited): never read stdio or a
			// file as credentials; start as if it were not there.
			return Hide()
		}
		return takeHandOver(fd)
	}
	keep, handed := sortEnviron(os.Environ(), keepEnvArgs(os.Args[1:]), modelKeyInUse(os.Getenv))
	if len(handed) == 0 {
		return nil, nil
	}
	blob := strings.Join(handed, "\x00")
	if len(blob) > maxHandOver {
		// stderr, not stdout: stdout belongs to the protocol.
		fmt.Fprintf(os.Stderr, "dsh-acp: warning: %d bytes of credential variables are too many to hand over; they stay readable in /proc/%d/environ\n", len(blob), os.Getpid())
		return nil, nil
	}
	reexecWith(keep, blob)
	return nil, nil
}

// takeHandOver reads what the process handed over before its re-exec on
// the pipe fd: the variables it kept (set again, in the Go environment
// only), and returns the names it withheld.
func takeHandOver(fd int) (dropped []string, err error) {
	f := os.NewFile(uintptr(fd), "secrets")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read credentials from before re-exec: %w", err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if name, ok := strings.CutPrefix(kv, withheldPrefix); ok {
			dropped = append(dropped, name)
		} else if name, value, ok := strings.Cut(kv, "="); ok {
			os.Setenv(name, value)
		}
	}
	return dropped, nil
}

// sortEnviron splits environ into what stays in the environment block
// (keep) and what is handed over: a credential the agent uses (the model
// key in use, keepNames, neededByAgent) as NAME=VALUE, any other as
// withheldPrefix+NAME.
func sortEnviron(environ, keepNames []string, inUse string) (keep, handed []string) {
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case !isCredential(name, value):
			keep = append(keep, kv)
		case isModelKey(name) && name != inUse && !slices.Contains(keepNames, name):
			// A second key (DEEPSEEK_API_KEY beside DSH_API_KEY) is not
			// used: it is not kept in memory either.
			handed = append(handed, withheldPrefix+name)
		case isModelKey(name), slices.Contains(keepNames, name), slices.Contains(neededByAgent(), name):
			handed = append(handed, kv)
		default:
			handed = append(handed, withheldPrefix+name)
		}
	}
	return keep, handed
}

// reexecWith re-executes the binary with the environment keep, handing
// blob over on a pipe; it returns only if that could not be done, and the
// process then runs on as it is.
func reexecWith(keep []string, blob string) {
	exe, err := os.Executable()
	if err != nil {
		return // cannot re-execute: run on as we are
	}
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil { // no O_CLOEXEC: the read end must survive exec
		return
	}
	if _, err := unix.Write(p[1], []byte(blob)); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return
	}
	unix.Close(p[1])
	keep = append(keep, secretsFDEnv+"="+strconv.Itoa(p[0]))
	if err := syscall.Exec(exe, os.Args, keep); err != nil {
		// The process is unchanged: run on as we are.
		unix.Close(p[0])
	}
}

// modelKeyInUse names the model key variable the configuration reads: the
// first one set, in CredentialEnv's order.
func modelKeyInUse(getenv func(string) string) string {
	for _, name := range executor.DefaultLimits().CredentialEnv {
		if getenv(name) != "" {
			return name
		}
	}
	return ""
}

// keepEnvArgs finds the --keep-env names among the arguments before the
// flags are parsed (the hand-over happens first thing). A prompt word that
// looks like the flag only keeps one more variable.
func keepEnvArgs(args []string) []string {
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-keep-env" || a == "--keep-env":
			if i+1 < len(args) {
				names = append(names, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "-keep-env="), strings.HasPrefix(a, "--keep-env="):
			_, v, _ := strings.Cut(a, "=")
			names = append(names, v)
		}
	}
	return names
}

// isHandOverPipe: the descriptor is one a re-exec could have left: not
// stdio, and a pipe.
func isHandOverPipe(fd int) bool {
	if fd <= 2 {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}
