//go:build !linux

package sandbox

import (
	"fmt"
	"os"
)

// HelperMain exits with HelperFailed if this process was started as the
// Linux sandbox helper, which this platform does not have; otherwise it
// returns at once. (On macOS commands run under sandbox-exec directly.)
func HelperMain(stdio Stdio) {
	if _, ok := os.LookupEnv(helperEnv); !ok {
		return
	}
	fmt.Fprintln(stdio.Err, HelperPrefix+"no helper on this platform")
	os.Exit(HelperFailed)
}
