package bashtool_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, nil)
}
