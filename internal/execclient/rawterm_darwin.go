package execclient

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput drops what was typed on terminal f and not read yet, so that
// a key pressed before a question cannot answer it.
func flushInput(f *os.File) {
	// FREAD (1): the input queue, as tcflush(TCIFLUSH) does.
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCFLUSH, 1)
}

// keepOutput turns output processing back on after term.MakeRaw turned it
// off: what other goroutines print while a question waits (the record of
// the call the question is about) still gets its carriage returns.
func keepOutput(f *os.File) {
	st, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	if err != nil {
		return
	}
	st.Oflag |= unix.OPOST | unix.ONLCR
	_ = unix.IoctlSetTermios(int(f.Fd()), unix.TIOCSETA, st)
}
