package bashtool_test

import (
	"os"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	// With DSH_TEST_EXECUTOR=sandbox the real-executor tests confine every
	// command: this binary is then also the sandbox helper.
	sandbox.HelperMain(sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	testutil.Main(m, nil)
}
