package docker_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// memStat reads a field of /proc/self/status, in KiB.
func memStat(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return -1
}

// resetPeakRSS resets VmHWM to the current RSS where the kernel allows.
func resetPeakRSS() int64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return memStat("VmHWM")
	}
	return memStat("VmRSS")
}
