package store_test

import "syscall"

// maxRSS is a child's peak resident set in bytes (Linux counts KiB).
func maxRSS(ru *syscall.Rusage) int64 { return ru.Maxrss << 10 }
