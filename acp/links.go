package acp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/wire"
	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// maxResourceText bounds the text of one resource the model is given with
// a prompt. An embedded resource is bounded by the longest frame the agent
// reads, and the model sees all of it; a linked file read for the model
// gets the same bound. Past it only the beginning is given, with a note.
const maxResourceText = wire.MaxFrame

// linkReadTimeout bounds a client's answer to fs/read_text_file: a client
// that does not answer must not hold the prompt.
const linkReadTimeout = 10 * time.Second

// fileReader is the part of the client connection that reads the editor's
// files (unsaved buffers included).
type fileReader interface {
	ReadTextFile(ctx context.Context, r acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error)
}

// linkReader reads the files a prompt links to without their text: through
// the client when it offers fs/read_text_file (so an unsaved buffer is what
// the model sees), else from disk, but only inside the session's cwd.
type linkReader struct {
	sid    acpsdk.SessionId
	cwd    string
	client fileReader // nil: the client reads no files for us
	log    *zap.Logger
}

// linkPath is the absolute file path a link names: a file:// URI or a
// path (relative ones against cwd); ok is false for anything else.
func linkPath(uri, cwd string) (string, bool) {
	if strings.HasPrefix(uri, "file:") {
		u, err := url.Parse(uri)
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return "", false
		}
		return filepath.Clean(u.Path), true
	}
	if strings.Contains(uri, "://") || uri == "" {
		return "", false
	}
	if !filepath.IsAbs(uri) {
		uri = filepath.Join(cwd, uri)
	}
	return filepath.Clean(uri), true
}

// read returns the text of the linked file, or ok false when the model is
// to get the link alone.
func (r linkReader) read(ctx context.Context, link *acpsdk.ContentBlockResourceLink) (path, text string, ok bool) {
	path, ok = linkPath(link.Uri, r.cwd)
	if !ok {
		return "", "", false
	}
	if r.client != nil {
		rctx, cancel := context.WithTimeout(ctx, linkReadTimeout)
		resp, err := r.client.ReadTextFile(rctx, acpsdk.ReadTextFileRequest{SessionId: r.sid, Path: path})
		cancel()
		if err == nil {
			return path, resp.Content, true
		}
		r.log.Info("client did not read a linked file; trying the disk", zap.String("path", path), zap.Error(err))
	}
	text, err := readInside(path, r.cwd)
	if err != nil {
		r.log.Info("linked file given as a link only", zap.String("path", path), zap.Error(err))
		return "", "", false
	}
	return path, text, true
}

var errOutside = errors.New("outside the session's directory")

// readInside reads the beginning of a text file that is inside dir, links
// followed only while they stay in it, up to one byte past maxResourceText
// (so the caller can tell it was cut). One open walks from dir with no
// second lookup by name: a command renaming a link to a file the sandbox
// denies over the linked file (or a directory above it) between a check
// and a read would put that file in the prompt.
func readInside(path, dir string) (string, error) {
	rel, ok := untrusted.RelIn(dir, path)
	if !ok {
		if _, err := os.Stat(path); err != nil {
			return "", err
		}
		return "", errOutside
	}
	b, err := untrusted.ReadIn(dir, rel, untrusted.LinksWithin, maxResourceText+1)
	if errors.Is(err, untrusted.ErrOutside) {
		return "", errOutside
	}
	if err != nil {
		return "", err
	}
	if strings.IndexByte(string(b), 0) >= 0 {
		return "", errors.New("not a text file")
	}
	return string(b), nil
}

// contextText is a resource's text as the model reads it: under its URI
// (and its path, when it was a linked file), cut at maxResourceText.
func contextText(uri, path, text string) string {
	note := ""
	if len(text) > maxResourceText {
		cut := text[:maxResourceText]
		// Not inside a character: back to the start of the last one.
		for i := len(cut); i > 0 && i > len(cut)-utf8.UTFMax; i-- {
			if utf8.RuneStart(cut[i-1]) {
				if !utf8.FullRuneInString(cut[i-1:]) {
					cut = cut[:i-1]
				}
				break
			}
		}
		text = cut
		note = fmt.Sprintf("\n[only the first %d bytes are shown; read the file for the rest]", maxResourceText)
	}
	attrs := fmt.Sprintf("uri=%q", uri)
	if path != "" {
		attrs += fmt.Sprintf(" path=%q", path)
	}
	return fmt.Sprintf("<context %s>\n%s%s\n</context>", attrs, strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\n"), note)
}
