package bashtool_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/dockertest"
)

func TestMain(m *testing.M) {
	// With DSH_TEST_EXECUTOR=sandbox the real-executor tests confine every
	// command: this binary is then also the sandbox helper.
	sandbox.HelperMain(sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	// With DSH_TEST_EXECUTOR=docker they run in containers, whose helper
	// is a static build made once (dockertest.Helper).
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		dockertest.RemoveHelper()
		os.Exit(code)
	}))
}
