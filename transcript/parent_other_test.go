//go:build !linux

package transcript_test

import "syscall"

// dieWithParent: no parent-death signal here; the harness kills the binary
// at cleanup.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
