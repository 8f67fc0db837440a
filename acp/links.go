package acp

import (
	"context"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// linkReadTimeout bounds a client's answer to fs/read_text_file for a
// linked file: a client that does not answer must not hold the prompt.
const linkReadTimeout = 10 * time.Second

// fileReader is the part of the client connection that reads the editor's
// files (unsaved buffers included).
type fileReader interface {
	ReadTextFile(ctx context.Context, r acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error)
}

// linkFiles are the client's fs/read_text_file as the reader of a prompt's
// linked files (turn.FileReader), for one session.
type linkFiles struct {
	sid acpsdk.SessionId
	r   fileReader
}

func (l linkFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, linkReadTimeout)
	defer cancel()
	resp, err := l.r.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{SessionId: l.sid, Path: path})
	return resp.Content, err
}
