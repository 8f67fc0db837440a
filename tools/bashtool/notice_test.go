package bashtool_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/tools/bashtool"
)

// TestNoticeQueuedIsLogged: "notice queued" names the task and the session
// and comes only once the notice was handed over — the golden transcripts
// wait on it before the model's next request.
func TestNoticeQueuedIsLogged(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	fake := newFake()
	var early int
	notify := func(session, text string) { early = logs.FilterMessage("notice queued").Len() }
	tb := newToolbox(t, bashtool.Options{Executor: fake, Notify: notify, Logger: zap.New(core)})
	id := startTask(t, tb, sessionA, "job")
	fake.finish(id, executor.Status{State: executor.Completed})
	if early != 0 {
		t.Errorf("notice logged as queued before Notify was called")
	}
	got := logs.FilterMessage("notice queued").AllUntimed()
	if len(got) != 1 {
		t.Fatalf("%d notice queued lines, want 1: %v", len(got), logs.AllUntimed())
	}
	if m := got[0].ContextMap(); m["task"] != id || m["session"] != sessionA.SessionID || got[0].Level != zapcore.DebugLevel {
		t.Errorf("notice queued at %v with %v, want debug with task %s and session %s", got[0].Level, m, id, sessionA.SessionID)
	}
}
