package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// processCPU is the CPU time pid's threads have run so far (the first field
// of each thread's schedstat, in nanoseconds): what a start costs the
// machine, which, unlike the wall time to an answer, does not grow with
// the other jobs waiting for a core.
func processCPU(pid int) (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread has ended
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}
