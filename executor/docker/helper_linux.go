package docker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/proctab"
)

// HelperMain is the helper's whole life inside a session's container: the
// agent's binary run as HelperMode there. It starts the commands the agent
// sends over stdin, streams their output and their real end (a signal is a
// signal, not an exit code 128+n) over stdout, signals their groups on
// request, and when stdin ends — the agent closed the session, or died and
// the engine dropped its connection — ends every command and returns, which
// ends the container. It returns the exit code.
func HelperMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(HelperMode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	grace := fs.Duration("grace", 2*time.Second, "how long commands get between SIGTERM and the end of the container")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	h := &helper{out: newFrameWriter(stdout), cmds: map[uint32]int{}, log: stderr}
	err := h.serve(newFrameReader(stdin))
	h.endAll(*grace)
	if !errors.Is(err, io.EOF) { // serve ends only on an error; EOF is the tether's cut
		fmt.Fprintln(stderr, "dsh-acp helper:", err)
		return 1
	}
	return 0
}

// helper runs one container's commands.
type helper struct {
	out *frameWriter
	log io.Writer

	// mu guards cmds.
	mu   sync.Mutex
	cmds map[uint32]int // command id → its shell's pid (group and session id)
}

func (h *helper) serve(fr *frameReader) error {
	for {
		f, err := fr.read()
		if err != nil {
			return err
		}
		switch f.kind {
		case kindStart:
			var req executor.StartRequest
			if err := json.Unmarshal(f.payload, &req); err != nil {
				h.send(kindFailed, f.id, []byte("bad start request: "+err.Error()))
				continue
			}
			h.start(f.id, req)
		case kindSignal:
			if len(f.payload) == 2 {
				h.signal(f.id, unix.Signal(f.payload[0]), f.payload[1] == 1)
			}
		case kindAlive:
			if len(f.payload) == 5 {
				alive := h.alive(binary.BigEndian.Uint32(f.payload), f.payload[4] == 1)
				h.send(kindIsAlive, f.id, []byte{boolByte(alive)})
			}
		case kindFileOp:
			// On its own goroutine, as a command's start is: a large
			// file or a slow disk holds up no signal. The payload is
			// the reader's until the next frame.
			payload := append([]byte(nil), f.payload...)
			go h.file(f.id, payload)
		default:
			return fmt.Errorf("unknown frame kind %q", f.kind)
		}
	}
}

func (h *helper) send(kind byte, id uint32, payload []byte) {
	if err := h.out.write(kind, id, payload); err != nil {
		// The agent is gone: stdin ends next, and with it everything.
		fmt.Fprintln(h.log, "dsh-acp helper: write:", err)
	}
}

// file does one file operation and sends its answer.
func (h *helper) file(id uint32, payload []byte) {
	var req fileReq
	data, err := decodeFileMsg(payload, &req)
	var res fileRes
	var out []byte
	if err != nil {
		res.Err = &wireErr{Msg: "bad file request: " + err.Error()}
	} else {
		res, out = serveFile(req, data)
	}
	msg, err := encodeFileMsg(res, out)
	if err != nil {
		msg, _ = encodeFileMsg(fileRes{Err: &wireErr{Msg: err.Error()}}, nil)
	}
	h.send(kindFileRes, id, msg)
}

// start runs one command as the executor would: bash -c in a session of
// its own, stdin /dev/null, both streams captured.
func (h *helper) start(id uint32, req executor.StartRequest) {
	outR, outW, err := os.Pipe()
	if err != nil {
		h.send(kindFailed, id, []byte(err.Error()))
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeFiles(outR, outW)
		h.send(kindFailed, id, []byte(err.Error()))
		return
	}
	cmd := &exec.Cmd{
		Path:        "/bin/bash",
		Args:        []string{"bash", "-c", req.Command},
		Dir:         req.Dir,
		Env:         req.Env,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if p, err := exec.LookPath("bash"); err == nil {
		cmd.Path = p
	}
	err = cmd.Start()
	closeFiles(outW, errW)
	if err != nil {
		closeFiles(outR, errR)
		h.send(kindFailed, id, []byte(startError(req, err)))
		return
	}
	pid := cmd.Process.Pid
	h.mu.Lock()
	h.cmds[id] = pid
	h.mu.Unlock()
	h.send(kindStarted, id, binary.BigEndian.AppendUint32(nil, uint32(pid)))
	streams := [2]*outStream{
		newOutStream(outR, kindStdout, kindOutEOF),
		newOutStream(errR, kindStderr, kindErrEOF),
	}
	for _, s := range streams {
		go h.stream(id, s)
	}
	go func() {
		_ = cmd.Wait()
		// The exit frame must follow every byte the shell wrote: the
		// agent stops reading a command's output a grace after its exit,
		// so output sent after the exit could be cut off on a busy machine.
		for _, s := range streams {
			s.catchUp()
		}
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		h.send(kindExit, id, binary.BigEndian.AppendUint32(nil, uint32(ws)))
	}()
}

// startError says why a command could not start in the container's terms.
func startError(req executor.StartRequest, err error) string {
	if _, serr := os.Stat(req.Dir); serr != nil {
		return fmt.Sprintf("workdir %s is not in the container (only the session's directory is): %v", req.Dir, serr)
	}
	return fmt.Sprintf("start bash in the container: %v", err)
}

// outStream is one captured pipe of a command, read by one goroutine.
type outStream struct {
	f         *os.File
	kind, eof byte
	exited    atomic.Bool   // the shell exited: a deadline means catch up
	caught    chan struct{} // closed once what was in the pipe at the exit was sent
	ended     chan struct{} // closed once the end of the stream was sent
}

func newOutStream(f *os.File, kind, eof byte) *outStream {
	return &outStream{f: f, kind: kind, eof: eof, caught: make(chan struct{}), ended: make(chan struct{})}
}

// catchUp returns once everything the pipe held when it was called has been
// sent. The shell has exited, so all it wrote is in the pipe by now; the
// reading goroutine is woken by a deadline, drains the pipe and goes back to
// reading what leftovers may still write.
func (s *outStream) catchUp() {
	s.exited.Store(true)
	_ = s.f.SetReadDeadline(time.Now()) // fails only once the stream ended: then all was sent
	select {
	case <-s.caught:
	case <-s.ended:
	}
}

func (h *helper) stream(id uint32, s *outStream) {
	defer close(s.ended)
	buf := make([]byte, 64<<10)
	caught := false
	for {
		n, err := s.f.Read(buf)
		if n > 0 {
			h.send(s.kind, id, buf[:n])
		}
		if !caught && errors.Is(err, os.ErrDeadlineExceeded) && s.exited.Load() {
			caught = true
			h.drain(id, s, buf)
			close(s.caught)
			continue
		}
		if err != nil {
			break
		}
	}
	_ = s.f.Close()
	h.send(s.eof, id, nil)
}

// maxCatchUp bounds the catch-up read: a leftover that keeps writing must
// not hold back the exit frame.
const maxCatchUp = 1 << 20

// drain sends what the pipe holds right now, without waiting for more.
func (h *helper) drain(id uint32, s *outStream, buf []byte) {
	executor.ReadReady(s.f, buf, maxCatchUp, func(b []byte) { h.send(s.kind, id, b) })
}

func (h *helper) pgid(id uint32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cmds[id]
}

// signal does what the executor does to a local group: the group, and with
// session every other group of the command's session.
func (h *helper) signal(id uint32, sig unix.Signal, session bool) {
	pgid := h.pgid(id)
	if pgid <= 0 {
		return
	}
	_ = proctab.SignalGroup(pgid, sig)
	if session {
		_, _ = proctab.SignalSession(pgid, sig)
	}
}

func (h *helper) alive(id uint32, session bool) bool {
	pgid := h.pgid(id)
	if pgid <= 0 {
		return false
	}
	return proctab.GroupAlive(pgid) || (session && proctab.SessionAlive(pgid))
}

// endAll ends every command's session: SIGTERM, then up to grace for them
// to go. What is left dies with the container (its init ends, and the
// kernel kills the rest of the PID namespace).
func (h *helper) endAll(grace time.Duration) {
	h.mu.Lock()
	sids := map[int]bool{}
	for _, pid := range h.cmds {
		sids[pid] = true
	}
	h.mu.Unlock()
	// The table is the container's (its PID namespace): without it, the
	// container's end still takes everything.
	_ = proctab.End(proctab.Ending{Sessions: sids, Grace: grace})
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
