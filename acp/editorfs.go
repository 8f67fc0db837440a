package acp

import (
	"context"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// fileWriter is the part of the client connection that writes the
// editor's files (through its buffers, so its review shows the change).
type fileWriter interface {
	WriteTextFile(ctx context.Context, r acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error)
}

// editorFSTimeout bounds a client's answer to fs/*: a client that does not
// answer must not hold the turn.
const editorFSTimeout = 30 * time.Second

// editorFiles are the client's fs/read_text_file and fs/write_text_file as
// tools.EditorFiles, for one session. Whether a file goes through them is
// the file tools' decision.
type editorFiles struct {
	sid acpsdk.SessionId
	r   fileReader
	w   fileWriter
}

func (e editorFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, editorFSTimeout)
	defer cancel()
	resp, err := e.r.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{SessionId: e.sid, Path: path})
	return resp.Content, err
}

func (e editorFiles) WriteTextFile(ctx context.Context, path, content string) error {
	ctx, cancel := context.WithTimeout(ctx, editorFSTimeout)
	defer cancel()
	_, err := e.w.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{SessionId: e.sid, Path: path, Content: content})
	return err
}

// editor is the session's editor files when the client offers both
// methods; nil otherwise.
func (a *Agent) editor(sid string, conn client) tools.EditorFiles {
	a.mu.Lock()
	both := a.clientReadsFiles && a.clientWritesFiles
	a.mu.Unlock()
	r, rok := conn.(fileReader)
	w, wok := conn.(fileWriter)
	if !both || !rok || !wok {
		return nil
	}
	return editorFiles{sid: acpsdk.SessionId(sid), r: r, w: w}
}
