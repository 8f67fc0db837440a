package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"go.uber.org/zap"
)

// maxLine matches the SDK's own limit for one frame.
const maxLine = 10 << 20

// lockedWriter makes each Write atomic, so frames written by the SDK and
// parse errors written by the input filter never interleave on stdout.
// Every frame is shown to written (if set) once its Write returned.
type lockedWriter struct {
	written func(frame []byte)

	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.written != nil {
		l.written(p)
	}
	return n, err
}

// filterInput passes well-formed JSON-RPC lines from in to the returned
// reader and answers the rest itself: the SDK logs and drops a line that is
// not JSON, but JSON-RPC 2.0 requires a Parse error (-32700) or Invalid
// Request (-32600) reply with a null id.
//
// Every frame passed on goes through observe first, in the order read; it
// returns the frame to pass on (possibly rewritten). Frames that arrived
// together (already buffered) are all observed before any is passed on: a
// session/cancel written right behind its session/prompt must be recorded
// before that prompt's turn can run, and a short turn can finish before
// this goroutine would otherwise get to the next line.
func filterInput(in io.Reader, out io.Writer, log *zap.Logger, observe func([]byte) []byte) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		var batch []byte
		for {
			batch = batch[:0]
			var err error
			for first := true; first || (err == nil && bufferedLine(br)); first = false {
				var line []byte
				line, err = readLine(br)
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				if reply := check(line); reply != nil {
					log.Warn("rejected malformed frame", zap.Int("bytes", len(line)))
					_, _ = out.Write(reply)
					continue
				}
				batch = append(append(batch, observe(line)...), '\n')
			}
			if len(batch) > 0 {
				if _, werr := pw.Write(batch); werr != nil {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					log.Warn("reading stdin failed", zap.Error(err))
				}
				pw.Close()
				return
			}
		}
	}()
	return pr
}

// bufferedLine reports whether a whole line is already buffered, so reading
// it cannot block.
func bufferedLine(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// readLine reads one line without its newline. A line over maxLine is
// consumed whole and returned truncated (it is then answered as malformed
// instead of killing the SDK's scanner).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine+1 {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorFrame(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := rpcError{JSONRPC: "2.0", ID: id}
	e.Error.Code = code
	e.Error.Message = msg
	b, _ := json.Marshal(e)
	return append(b, '\n')
}

// check returns the error reply for a line that is not a usable JSON-RPC
// message, or nil to pass it on.
func check(line []byte) []byte {
	if len(line) > maxLine || !json.Valid(line) {
		return errorFrame(nil, -32700, "Parse error: not valid JSON")
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		// Valid JSON but not an object: a batch or a bare value.
		return errorFrame(nil, -32600, "Invalid Request: expected a JSON-RPC object (batches are not supported)")
	}
	switch {
	case msg.Method != nil && *msg.Method == "":
		return errorFrame(msg.ID, -32600, "Invalid Request: empty method")
	case msg.Method != nil:
		return nil
	case len(msg.ID) > 0 && (len(msg.Result) > 0 || len(msg.Error) > 0):
		return nil // a response to one of our requests
	}
	return errorFrame(msg.ID, -32600, "Invalid Request: no method")
}
