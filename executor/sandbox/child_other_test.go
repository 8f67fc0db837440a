//go:build !linux

package sandbox_test

// child runs no helper mode off Linux: the tests that start one are Linux's.
func child(string) int { return 2 }
