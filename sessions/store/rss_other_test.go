//go:build !linux

package store_test

import "syscall"

// maxRSS is a child's peak resident set in bytes (macOS counts bytes).
func maxRSS(ru *syscall.Rusage) int64 { return ru.Maxrss }
