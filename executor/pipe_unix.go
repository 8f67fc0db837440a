//go:build !linux || portable

package executor

import "os"

// growPipe: pipes cannot be resized here (macOS sizes them itself, up to
// 64 KiB); the larger read buffer still applies.
func growPipe(*os.File) {}
