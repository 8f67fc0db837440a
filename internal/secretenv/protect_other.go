//go:build !linux

package secretenv

// Protect: macOS has no /proc, and reading another process's memory
// (task_for_pid) needs root or a debugger entitlement there, so there is
// nothing to switch off. Its environment block (KERN_PROCARGS2) is what the
// credential hand-over empties.
func Protect() error { return nil }
