package docker

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// tetherFiles are a session's file operations done by the helper in its
// container (a remote engine's): each is one question over the tether and
// its answer. The first one makes the container if no command has yet.
type tetherFiles struct {
	d *Confiner
	a executor.FileAccess
}

var _ executor.Files = (*tetherFiles)(nil)

func (t *tetherFiles) do(req fileReq, data []byte) (fileRes, []byte, error) {
	// The container the session's commands run in: the same roots.
	b, err := t.d.box(executor.Confinement{Spec: executor.Spec{Owner: t.a.Owner, Root: t.a.Root, Roots: t.a.Roots, Workdir: t.a.Root}, SpillDir: t.a.SpillDir})
	if err != nil {
		return fileRes{}, nil, err
	}
	req.Root, req.Roots, req.Read = t.a.Root, t.a.Roots, t.d.opts.Read
	return b.file(req, data)
}

// ReadFile is executor.Files'.
func (t *tetherFiles) ReadFile(path string, max int64) ([]byte, error) {
	if max > maxFileData {
		return nil, fmt.Errorf("docker: read %s: at most %d bytes go over the tether, not %d", path, maxFileData, max)
	}
	res, data, err := t.do(fileReq{Op: opRead, Path: path, Max: max}, nil)
	if err != nil {
		return nil, err
	}
	return data, res.Err.error()
}

// WriteFile is executor.Files'.
func (t *tetherFiles) WriteFile(path string, data []byte) error {
	if len(data) > maxFileData {
		return &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%d bytes: at most %d go to a remote engine's container at once", len(data), maxFileData)}
	}
	res, _, err := t.do(fileReq{Op: opWrite, Path: path}, data)
	if err != nil {
		return err
	}
	return res.Err.error()
}

// Remove is executor.Files'.
func (t *tetherFiles) Remove(path string) error {
	res, _, err := t.do(fileReq{Op: opRemove, Path: path}, nil)
	if err != nil {
		return err
	}
	return res.Err.error()
}

// Stat is executor.Files'.
func (t *tetherFiles) Stat(path string) (fs.FileInfo, error) {
	res, _, err := t.do(fileReq{Op: opStat, Path: path}, nil)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err.error()
	}
	if res.Info == nil {
		return nil, fmt.Errorf("docker: stat %s: the helper's answer has no file", path)
	}
	return remoteInfo{*res.Info}, nil
}

// ReadDir is executor.Files'.
func (t *tetherFiles) ReadDir(path string) ([]fs.DirEntry, error) {
	res, _, err := t.do(fileReq{Op: opReadDir, Path: path}, nil)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err.error()
	}
	ents := make([]fs.DirEntry, len(res.Ents))
	for i, w := range res.Ents {
		ents[i] = remoteEntry{w: w, dir: path}
	}
	return ents, nil
}

// fileAnswer is the helper's answer to a file operation, decoded.
type fileAnswer struct {
	res  fileRes
	data []byte
	err  error
}

// file asks the helper to do one file operation and waits for its answer,
// as long as for a command's start.
func (b *box) file(req fileReq, data []byte) (fileRes, []byte, error) {
	payload, err := encodeFileMsg(req, data)
	if err != nil {
		return fileRes{}, nil, fmt.Errorf("docker: %s %s: %w", req.Op, req.Path, err)
	}
	ch := make(chan fileAnswer, 1)
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return fileRes{}, nil, fmt.Errorf("docker: %s %s: the session's container is ending", req.Op, req.Path)
	}
	b.next++
	id := b.next
	b.files[id] = ch
	b.mu.Unlock()
	forget := func() {
		b.mu.Lock()
		delete(b.files, id)
		b.mu.Unlock()
	}
	if err := b.fw.write(kindFileOp, id, payload); err != nil {
		forget()
		return fileRes{}, nil, fmt.Errorf("docker: %s %s: send to the session's container: %w", req.Op, req.Path, err)
	}
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a.res, a.data, a.err
	case <-b.done:
		forget()
		return fileRes{}, nil, errContainerGone
	case <-timer.C:
		forget()
		b.silent("do a file operation")
		return fileRes{}, nil, errContainerGone
	}
}

// fileAnswered hands the helper's answer to the operation waiting for it.
// The payload is the frame reader's: decoded and copied here.
func (b *box) fileAnswered(f frame) {
	b.mu.Lock()
	ch := b.files[f.id]
	delete(b.files, f.id)
	b.mu.Unlock()
	if ch == nil {
		return
	}
	var a fileAnswer
	data, err := decodeFileMsg(f.payload, &a.res)
	if err != nil {
		a.err = fmt.Errorf("docker: the helper's answer: %w", err)
	} else if len(f.payload) > bigFrame {
		a.data = data // the reader made this frame's buffer for it alone
	} else if len(data) > 0 {
		a.data = append([]byte(nil), data...)
	}
	ch <- a
}
