package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// HelperMain runs the sandbox helper and exits when this process was started
// as one (by a Launcher or by Probe); otherwise it returns at once. Call it
// first in main, before flags or stdin are touched, with the process's
// standard files; the helper itself never writes to them but for a stage
// it does not know.
func HelperMain(stdio Stdio) {
	stage, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	// exit_group at once rather than os.Exit: a race-enabled build (the
	// tests') would otherwise sleep a second in the race runtime's exit
	// hook. Nothing of the helper's is buffered.
	syscall.Exit(runStage(stage, stdio))
}

func runStage(stage string, stdio Stdio) int {
	switch stage {
	case stageZygote:
		return zygoteMain()
	case stageProbe:
		return probeStage()
	default:
		fmt.Fprintf(stdio.Err, HelperPrefix+"unknown helper stage %q\n", stage)
		return HelperFailed
	}
}

// probeStage checks, in the namespaces Probe created, that /proc can be
// mounted for them.
func probeStage() int {
	if os.Getpid() != 1 {
		return 0 // a user namespace alone: starting was the test
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 4
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return 5
	}
	return 0
}
