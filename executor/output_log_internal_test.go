package executor

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestCaptureLogsBackgroundReads: each write into a background stream is
// logged, after the bytes are readable, with the stream's running total —
// the event the golden transcripts wait on before bash_output. Foreground
// streams log nothing per write.
func TestCaptureLogsBackgroundReads(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	c := newCapture("bash-1-stdout", 100, 100, nil, zap.New(core), nil)
	var totals []any
	for _, s := range []string{"first\n", "second\n"} {
		c.Write([]byte(s))
		got := logs.TakeAll()
		if len(got) != 1 || got[0].Message != "background task output read" || got[0].Level != zapcore.DebugLevel {
			t.Fatalf("after writing %q: %v", s, got)
		}
		m := got[0].ContextMap()
		if m["stream"] != "bash-1-stdout" {
			t.Errorf("stream %v, want bash-1-stdout", m["stream"])
		}
		totals = append(totals, m["total"])
	}
	if totals[0] != int64(6) || totals[1] != int64(13) {
		t.Errorf("totals %v, want [6 13]", totals)
	}
	if ch := c.take(); ch.Text != "first\nsecond\n" {
		t.Errorf("take = %q", ch.Text)
	}

	fg := newCapture("run-stdout", 100, 0, nil, zap.New(core), nil)
	fg.Write([]byte("x\n"))
	if n := logs.Len(); n != 0 {
		t.Errorf("a foreground write logged %d lines: %v", n, logs.AllUntimed())
	}
}
