package sandbox_test

import (
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
