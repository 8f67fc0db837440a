package transcript_test

import (
	"bytes"
	"io"
	"os"
	"time"
)

// logCopyName is where, under $TMP, the harness keeps a copy of the agent's
// log for the scenarios' commands to wait on (see README.md). The log
// itself is the agent's: a sandboxed command cannot read it.
const logCopyName = "log-copy.jsonl"

// logCopier appends each complete line of the agent's log to the copy,
// pollInterval after it was written at the latest. The log is only ever
// appended to, restarts included.
type logCopier struct {
	src, dst string
	stop     chan struct{}
	done     chan struct{}
}

func startLogCopy(src, dst string) (*logCopier, error) {
	if err := os.WriteFile(dst, nil, 0o644); err != nil {
		return nil, err
	}
	c := &logCopier{src: src, dst: dst, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *logCopier) loop() {
	defer close(c.done)
	var off int64
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		off = c.copyFrom(off)
		select {
		case <-c.stop:
			c.copyFrom(off)
			return
		case <-t.C:
		}
	}
}

// copyFrom copies the complete lines after off and returns where the next
// copy starts.
func (c *logCopier) copyFrom(off int64) int64 {
	f, err := os.Open(c.src)
	if err != nil {
		return off // not written yet
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return off
	}
	n := bytes.LastIndexByte(b, '\n') + 1
	if n == 0 {
		return off
	}
	out, err := os.OpenFile(c.dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return off
	}
	defer out.Close()
	if _, err := out.Write(b[:n]); err != nil {
		return off
	}
	return off + int64(n)
}

// close stops the copier after a last copy.
func (c *logCopier) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}
