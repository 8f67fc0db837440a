package proctab

import "golang.org/x/sys/unix"

// sZomb is SZOMB of <sys/proc.h>: exited, not yet reaped.
const sZomb = 5

// list reads kern.proc.all. The table gives the group but not the session
// id (only a kernel address), so that comes from getsid(2), which macOS
// answers for any process.
func list() ([]Proc, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(kps))
	for i := range kps {
		kp := &kps[i]
		pid := int(kp.Proc.P_pid)
		if pid <= 0 {
			continue
		}
		sid, err := unix.Getsid(pid)
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, Proc{Pid: pid, Pgid: int(kp.Eproc.Pgid), Sid: sid, Zombie: kp.Proc.P_stat == sZomb})
	}
	return out, nil
}

// StartTime is the kernel's p_starttime, in microseconds since the epoch.
func StartTime(pid int) (uint64, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	tv := k.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec), nil
}

// Lookup returns pid's entry of the table; ok is false when there is none.
func Lookup(pid int) (p Proc, ok bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid {
		return Proc{}, false
	}
	sid, err := unix.Getsid(pid)
	if err != nil {
		return Proc{}, false
	}
	return Proc{Pid: pid, Pgid: int(k.Eproc.Pgid), Sid: sid, Zombie: k.Proc.P_stat == sZomb}, true
}
