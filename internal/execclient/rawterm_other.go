//go:build !linux && !darwin

package execclient

import "os"

// flushInput is done on Linux and macOS only; elsewhere a key typed
// ahead that the reader has not taken yet can still answer the next
// question.
func flushInput(*os.File) {}

// keepOutput is done on Linux and macOS only.
func keepOutput(*os.File) {}
