package proctab

import "golang.org/x/sys/unix"

// Marked is a process whose environment carries a marker. macOS does not
// let one read another process's environment without the KERN_PROCARGS2
// sysctl, so none is ever found there: only sessions are ended.
type Marked struct{ Pid int }

// Signal does nothing: no Marked is ever found on macOS.
func (Marked) Signal(unix.Signal) {}

// Close does nothing.
func (Marked) Close() {}

// FindMarked finds nothing on macOS (see Marked).
func FindMarked([]Proc, []string, map[int]bool) []Marked { return nil }

// KillMarked does nothing on macOS (see Marked).
func KillMarked(string) {}
