package transcript_test

import "syscall"

// dieWithParent: the binary dies with the test process whatever happens.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
