package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput drops what was typed on terminal f and not read yet, so that
// a key pressed before a question cannot answer it.
func flushInput(f *os.File) {
	_ = unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
}
