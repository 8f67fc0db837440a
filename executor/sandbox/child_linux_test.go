package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// child is the test binary run by a confined command (testutil.ChildEnv):
// "dial PATH" connects to the unix socket at PATH, exit 0 if it could.
func child(mode string) int {
	if mode == "tgkill" && len(os.Args) >= 3 {
		return tgkillAll(os.Args[2])
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
