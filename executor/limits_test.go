package executor_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-acp/dsh-acp/executor"
)

func TestLimitsWithDefaults(t *testing.T) {
	t.Parallel()
	def := executor.DefaultLimits()
	if diff := cmp.Diff(def, executor.Limits{}.WithDefaults()); diff != "" {
		t.Errorf("zero limits (-default +got):\n%s", diff)
	}
	given := executor.Limits{DefaultTimeout: time.Second, MaxTimeout: 2 * time.Second, KillGrace: 3 * time.Millisecond,
		LeftoverGrace: 4 * time.Millisecond, TailBytes: 5, UnreadBytes: 6, CredentialEnv: []string{"K"}}
	if diff := cmp.Diff(given, given.WithDefaults()); diff != "" {
		t.Errorf("given limits changed (-given +got):\n%s", diff)
	}
	// UnreadBytes does not follow a smaller TailBytes: a read may hand the
	// model more than a foreground tail.
	if got := (executor.Limits{TailBytes: 16}).WithDefaults().UnreadBytes; got != def.UnreadBytes {
		t.Errorf("UnreadBytes = %d, want %d", got, def.UnreadBytes)
	}
	if !cmp.Equal(def.CredentialEnv, []string{"DSH_API_KEY", "DEEPSEEK_API_KEY"}) {
		t.Errorf("credential names %q", def.CredentialEnv)
	}
}

func TestLimitsTimeout(t *testing.T) {
	t.Parallel()
	l := executor.Limits{DefaultTimeout: 5 * time.Second, MaxTimeout: 10 * time.Second}
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 5 * time.Second}, {time.Millisecond, time.Millisecond}, {10 * time.Second, 10 * time.Second}, {time.Hour, 10 * time.Second},
	} {
		if got := l.Timeout(tc.in); got != tc.want {
			t.Errorf("Timeout(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
