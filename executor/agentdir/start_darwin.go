package agentdir

import "golang.org/x/sys/unix"

// startTime is the kernel's p_starttime, in microseconds since the epoch.
func startTime(pid int) (uint64, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	tv := k.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec), nil
}
