//go:build !linux

package docker_test

func memStat(string) int64 { return -1 }

func resetPeakRSS() int64 { return -1 }
