package agentdir

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// startTime is field 22 of /proc/pid/stat: clock ticks after boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold anything, ')' included: the fields start
	// after the last one, with field 3 (the state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fs := bytes.Fields(b[i+1:])
	if len(fs) < 20 {
		return 0, errors.New("malformed /proc stat")
	}
	return strconv.ParseUint(string(fs[19]), 10, 64)
}
