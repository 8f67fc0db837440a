package proctab

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// SelfStatusKiB is a "VmXXX:  N kB" field of this process's status, in
// KiB; -1 where there is none (not Linux). For the memory benchmarks and
// tests, which measure the process they run in.
func SelfStatusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			if fs := strings.Fields(rest); len(fs) > 0 {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				return n
			}
		}
	}
	return -1
}

// ResetPeakRSS makes VmHWM start again from the current RSS where the
// kernel allows (Linux 4.0+) and returns the baseline to measure growth
// from; else the peak so far.
func ResetPeakRSS() int64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return SelfStatusKiB("VmHWM")
	}
	return SelfStatusKiB("VmRSS")
}
