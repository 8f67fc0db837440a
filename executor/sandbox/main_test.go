package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// The test binary is also the helper: Launcher re-executes os.Executable().
func TestMain(m *testing.M) {
	sandbox.HelperMain(sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	testutil.Main(m, child)
}

// child is the test binary run by a confined command (testutil.ChildEnv):
// "dial PATH" connects to the unix socket at PATH, exit 0 if it could.
func child(mode string) int {
	if mode != "dial" || len(os.Args) < 3 {
		return 2
	}
	c, err := net.Dial("unix", os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = c.Close()
	return 0
}
