package main

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

// isCredential: the model key variables, and every name the executor
// scrubs from commands (KEY, SECRET, TOKEN, PASSWORD).
func isCredential(name string) bool {
	return slices.Contains(executor.DefaultLimits().CredentialEnv, name) || executor.LooksSecret(name)
}

// hideSecrets keeps credentials out of this process's environment block.
// The executor removes them from every command's environment, but
// /proc/<pid>/environ of the agent itself shows the environment it was
// started with — readable by any command running as the same user, and by
// root, whom non-dumpable does not stop. So when credentials arrive in the
// environment, the program re-executes itself (same pid, same stdio)
// without them and hands them over through a pipe; they then live only in
// the Go environment (os.Getenv), never in the block /proc shows.
//
// It must run first thing in main: exec replaces the process.
func hideSecrets() error {
	if fdText, ok := os.LookupEnv(secretsFDEnv); ok {
		os.Unsetenv(secretsFDEnv)
		fd, err := strconv.Atoi(fdText)
		if err != nil || !isHandOverPipe(fd) {
			// Not ours (set by hand, or inherited): never read stdio or a
			// file as credentials; start as if it were not there.
			return hideSecrets()
		}
		f := os.NewFile(uintptr(fd), "secrets")
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("read credentials from before re-exec: %w", err)
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if name, value, ok := strings.Cut(kv, "="); ok {
				os.Setenv(name, value)
			}
		}
		return nil
	}

	var keep, hidden []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if isCredential(name) {
			hidden = append(hidden, kv)
		} else {
			keep = append(keep, kv)
		}
	}
	blob := strings.Join(hidden, "\x00")
	if len(hidden) == 0 {
		return nil
	}
	if len(blob) > maxHandOver {
		// stderr, not stdout: stdout belongs to the protocol.
		fmt.Fprintf(os.Stderr, "dsh-acp: warning: %d bytes of credential variables are too many to hand over; they stay readable in /proc/%d/environ\n", len(blob), os.Getpid())
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil // cannot re-execute: run on as we are
	}
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil { // no O_CLOEXEC: the read end must survive exec
		return nil
	}
	if _, err := unix.Write(p[1], []byte(blob)); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil
	}
	unix.Close(p[1])
	keep = append(keep, secretsFDEnv+"="+strconv.Itoa(p[0]))
	if err := syscall.Exec(exe, os.Args, keep); err != nil {
		// The process is unchanged: run on as we are.
		unix.Close(p[0])
	}
	return nil
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
