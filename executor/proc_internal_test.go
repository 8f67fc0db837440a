package executor

import (
	"os"
	"testing"
	"time"

	"go.uber.org/zap"
)

// A reader that never ran before the leftover grace cut it off still gets
// what the shell left in the pipe.
func TestReadDrainsAfterDeadline(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open, as a leftover would
	if _, err := w.WriteString("written before exit\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	p := &proc{readersDone: make(chan struct{})}
	p.readersLeft.Store(1)
	c := newCapture("x", 100, 0, nil, zap.NewNop(), nil)
	done := make(chan struct{})
	go func() {
		p.read(r, c)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not return")
	}
	if got := c.output().Text; got != "written before exit\n" {
		t.Errorf("captured %q", got)
	}
}
