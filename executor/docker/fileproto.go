package docker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// A file operation over the tether is one kindFileOp frame and its one
// kindFileRes answer, both encoded by encodeFileMsg: a 32-bit length, that
// many bytes of JSON (fileReq, fileRes), then the file's bytes raw (what
// is written, what was read), so a file costs no base64.

// File operations, as the helper does them (executor.Files').
const (
	opRead    = "read"
	opWrite   = "write"
	opStat    = "stat"
	opReadDir = "readdir"
	opRemove  = "remove"
)

// fileReq is one file operation for the helper. The policy travels with
// it: what the container may see is the session's directory, its other
// roots and the read-only mounts, and the helper resolves both (and the path) in the
// container's own files.
type fileReq struct {
	Op   string   `json:"op"`
	Path string   `json:"path"`
	Max  int64    `json:"max,omitempty"`  // read: at most this many bytes
	Root string   `json:"root"`           // the session's directory (writable)
	Read []string `json:"read,omitempty"` // the --docker-read paths
	// Roots are the session's other project roots (writable).
	Roots []string `json:"roots,omitempty"`
}

// fileRes is a file operation's result.
type fileRes struct {
	Err  *wireErr    `json:"err,omitempty"`
	Info *wireInfo   `json:"info,omitempty"` // stat
	Ents []wireEntry `json:"ents,omitempty"` // readdir
}

// wireInfo is an fs.FileInfo.
type wireInfo struct {
	Name  string      `json:"n"`
	Size  int64       `json:"s"`
	Mode  fs.FileMode `json:"m"` // Go's bits, the same on every system
	MTime int64       `json:"t"` // Unix nanoseconds
}

// wireEntry is an fs.DirEntry with its Info (an lstat, as os's): glob
// wants every match's time, and one answer per directory is far cheaper
// than one question per file.
type wireEntry struct {
	wireInfo
	// Bad: the entry's lstat failed (it vanished meanwhile); Info is then
	// an error, as os's would be.
	Bad bool `json:"bad,omitempty"`
}

// wireErr is an error, as much of it as the file tools read: a
// *fs.PathError's operation and path, the kind of failure (a sentinel
// errors.Is finds) and the text.
type wireErr struct {
	Op   string `json:"op,omitempty"`
	Path string `json:"path,omitempty"`
	Kind string `json:"kind,omitempty"`
	Msg  string `json:"msg"`
}

// kinds are the failures the file tools tell apart, by name on the wire:
// errno values differ between the container's system and the agent's.
var kinds = []struct {
	name string
	err  error
}{
	{"notexist", fs.ErrNotExist},
	{"exist", fs.ErrExist},
	{"permission", fs.ErrPermission},
	{"toolarge", executor.ErrTooLarge},
	{"isdir", executor.ErrIsDirectory},
	{"link", untrusted.ErrLink},
	{"outside", untrusted.ErrOutside},
	{"notregular", untrusted.ErrNotRegular},
}

func toWireErr(err error) *wireErr {
	if err == nil {
		return nil
	}
	w := &wireErr{}
	inner := err
	var pe *fs.PathError
	if errors.As(err, &pe) && pe == err {
		w.Op, w.Path, inner = pe.Op, pe.Path, pe.Err
	}
	w.Msg = inner.Error()
	for _, k := range kinds {
		if errors.Is(inner, k.err) {
			w.Kind = k.name
			break
		}
	}
	return w
}

// error is the error w describes: errors.Is finds its kind, and it reads as
// the helper's did.
func (w *wireErr) error() error {
	if w == nil {
		return nil
	}
	var inner error = errors.New(w.Msg)
	for _, k := range kinds {
		if k.name == w.Kind {
			inner = &kindErr{msg: w.Msg, kind: k.err}
			break
		}
	}
	if w.Op == "" {
		return inner
	}
	return &fs.PathError{Op: w.Op, Path: w.Path, Err: inner}
}

// kindErr is a remote error of a known kind.
type kindErr struct {
	msg  string
	kind error
}

func (e *kindErr) Error() string { return e.msg }
func (e *kindErr) Unwrap() error { return e.kind }

func toWireInfo(fi fs.FileInfo) wireInfo {
	return wireInfo{Name: fi.Name(), Size: fi.Size(), Mode: fi.Mode(), MTime: fi.ModTime().UnixNano()}
}

// remoteInfo is a wireInfo as an fs.FileInfo.
type remoteInfo struct{ w wireInfo }

func (i remoteInfo) Name() string       { return i.w.Name }
func (i remoteInfo) Size() int64        { return i.w.Size }
func (i remoteInfo) Mode() fs.FileMode  { return i.w.Mode }
func (i remoteInfo) ModTime() time.Time { return time.Unix(0, i.w.MTime) }
func (i remoteInfo) IsDir() bool        { return i.w.Mode.IsDir() }
func (i remoteInfo) Sys() any           { return nil }

// remoteEntry is a wireEntry as an fs.DirEntry.
type remoteEntry struct {
	w   wireEntry
	dir string
}

func (e remoteEntry) Name() string      { return e.w.Name }
func (e remoteEntry) IsDir() bool       { return e.w.Mode.IsDir() }
func (e remoteEntry) Type() fs.FileMode { return e.w.Mode.Type() }
func (e remoteEntry) Info() (fs.FileInfo, error) {
	if e.w.Bad {
		return nil, &fs.PathError{Op: "lstat", Path: e.dir + "/" + e.w.Name, Err: os.ErrNotExist}
	}
	return remoteInfo{e.w.wireInfo}, nil
}

// encodeFileMsg is meta as JSON and data after it, as one payload.
func encodeFileMsg(meta any, data []byte) ([]byte, error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileData {
		return nil, fmt.Errorf("%d bytes: more than the %d a file operation carries", len(data), maxFileData)
	}
	b := make([]byte, 0, 4+len(js)+len(data))
	b = binary.BigEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	return append(b, data...), nil
}

// decodeFileMsg reads what encodeFileMsg wrote into meta and returns the
// data, which aliases payload.
func decodeFileMsg(payload []byte, meta any) ([]byte, error) {
	if len(payload) < 4 {
		return nil, errors.New("file message: short")
	}
	n := binary.BigEndian.Uint32(payload)
	if uint64(n) > uint64(len(payload)-4) {
		return nil, errors.New("file message: description longer than the message")
	}
	if err := json.Unmarshal(payload[4:4+n], meta); err != nil {
		return nil, fmt.Errorf("file message: %w", err)
	}
	return payload[4+n:], nil
}
