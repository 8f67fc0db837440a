//go:build !linux

package docker

import (
	"fmt"
	"io"
)

// HelperMain runs only inside a container, on Linux.
func HelperMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dsh-acp: the container helper runs on Linux only")
	return 1
}
