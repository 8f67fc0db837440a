package docker

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/testutil"
)

// TestOutputWaitsWithoutTheLock: output the helper streams into a full
// capture pipe must not hold the command's lock. The executor reads the pipe
// only once start returned, and start takes that lock after the helper's
// started frame: holding it through a blocked write hung a session whose
// first command printed more than a pipe holds (transcript 05 under load).
func TestOutputWaitsWithoutTheLock(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &remoteProc{out: w, started: make(chan struct{}), exited: make(chan struct{})}
	defer p.closeFiles()
	big := bytes.Repeat([]byte("x"), 1<<20) // more than any pipe holds
	written := make(chan struct{})
	go func() {
		defer close(written)
		p.handle(frame{kind: kindStdout, payload: big})
	}()
	// Once bytes are in the pipe the write has begun, and it cannot finish
	// before the pipe is read.
	for {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		runtime.Gosched()
	}
	took := make(chan struct{})
	go func() {
		p.Pid() // takes p.mu, as start does
		close(took)
	}()
	select {
	case <-took:
	case <-time.After(testutil.Timeout):
		t.Error("the command's lock is held while its output waits for a reader")
	}
	got, err := io.ReadAll(io.LimitReader(r, int64(len(big))))
	if err != nil || len(got) != len(big) {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(big))
	}
	<-written
	<-took
}
