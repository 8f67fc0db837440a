package docker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The tether's protocol: frames over the helper's stdin (agent → helper) and
// stdout (helper → agent). A frame is a kind byte, a 32-bit id and a 32-bit
// payload length, big-endian, then the payload. The id names a command
// (chosen by the agent, never reused within a container) or, for queries,
// the query.
const (
	// agent → helper
	kindStart  = 'S' // id: command; payload: executor.StartRequest as JSON
	kindSignal = 'K' // id: command; payload: signal number (1 byte), session walk (1 byte)
	kindAlive  = 'A' // id: query; payload: command id (4 bytes), session walk (1 byte)
	kindFileOp = 'R' // id: query; payload: a file operation (fileReq, see encodeFileMsg)

	// helper → agent
	kindStarted = 'P' // id: command; payload: the shell's pid in the container (4 bytes)
	kindFailed  = 'F' // id: command; payload: why it did not start
	kindStdout  = 'O' // id: command; payload: output bytes
	kindStderr  = 'E' // id: command; payload: output bytes
	kindOutEOF  = 'o' // id: command; stdout is at its end
	kindErrEOF  = 'e' // id: command; stderr is at its end
	kindExit    = 'X' // id: command; payload: the shell's wait status (4 bytes)
	kindIsAlive = 'a' // id: query; payload: 1 if alive, else 0
	kindFileRes = 'r' // id: query; payload: the file operation's result (fileRes, see encodeFileMsg)
)

const headerLen = 9

// maxPayload bounds a frame: output goes in reads of at most 64 KiB, a
// start carries one command and its environment, a file operation at most
// maxFileData bytes of a file and its description.
const maxPayload = maxFileData + 1<<20

// maxFileData bounds the bytes of one file read or written through the
// helper: the file tools take files of at most 16 MiB whole.
const maxFileData = 16 << 20

// frameWriter writes whole frames; safe for concurrent use.
type frameWriter struct {
	// mu guards w and buf.
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newFrameWriter(w io.Writer) *frameWriter { return &frameWriter{w: w} }

// write sends one frame with a single Write, so frames of concurrent
// writers never interleave and a frame costs one system call.
func (fw *frameWriter) write(kind byte, id uint32, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.buf = appendHeader(fw.buf[:0], kind, id, len(payload))
	fw.buf = append(fw.buf, payload...)
	_, err := fw.w.Write(fw.buf)
	if cap(fw.buf) > 128<<10 {
		fw.buf = nil // one large start does not stay
	}
	return err
}

func appendHeader(b []byte, kind byte, id uint32, n int) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// frame is one frame read; payload is valid until the next read.
type frame struct {
	kind    byte
	id      uint32
	payload []byte
}

// bigFrame is the largest frame whose buffer a frameReader keeps.
const bigFrame = 128 << 10

// frameReader reads frames.
type frameReader struct {
	r   *bufio.Reader
	hdr [headerLen]byte
	buf []byte
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 128<<10)}
}

// read returns the next frame; io.EOF at a clean end between frames.
func (fr *frameReader) read() (frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return frame{}, fmt.Errorf("tether: short frame header: %w", err)
		}
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(fr.hdr[5:])
	if n > maxPayload {
		return frame{}, fmt.Errorf("tether: frame of %d bytes", n)
	}
	var buf []byte
	if n > bigFrame {
		// A file's bytes: not kept for the next frame.
		buf = make([]byte, n)
	} else {
		if cap(fr.buf) < int(n) {
			fr.buf = make([]byte, n)
		}
		buf = fr.buf[:n]
	}
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		return frame{}, fmt.Errorf("tether: short frame: %w", err)
	}
	return frame{kind: fr.hdr[0], id: binary.BigEndian.Uint32(fr.hdr[1:5]), payload: buf}, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
